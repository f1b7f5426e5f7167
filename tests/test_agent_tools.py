from __future__ import annotations

import json
from pathlib import Path

import pytest

from greenloop.agents.textedit import apply_block, done_summary, parse_blocks
from greenloop.agents.tools import (
    MAX_HITS,
    MAX_LIST_ENTRIES,
    ToolError,
    call_tool,
    excerpt,
    mentioned_files,
    resolve_inside,
    tool_specs,
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "src" / "dup.py").write_text("x = 1\nx = 1\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    (root / "node_modules" / "lib").mkdir(parents=True)
    (root / "node_modules" / "lib" / "index.js").write_text("return a - b\n")
    (root / "env").mkdir()
    (root / "env" / "pyvenv.cfg").write_text("home = /usr\n")
    (root / "env" / "site.py").write_text("return a - b\n")
    return root


def call(root: Path, name: str, **args: object) -> tuple[bool, str]:
    result = call_tool(root, name, json.dumps(args))
    return result.ok, result.text


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../../etc/passwd", "'..' is not allowed"),
        ("/etc/passwd", "absolute paths"),
        (".git/config", ".git/"),
        ("src/../.git/config", "'..' is not allowed"),
        ("", "non-empty"),
    ],
)
def test_resolve_inside_refuses_paths_that_leave_the_repo_or_touch_git(
    repo: Path, path: str, reason: str
) -> None:
    with pytest.raises(ToolError, match=reason if reason != ".git/" else r"\.git/"):
        resolve_inside(repo, path)


def test_every_writing_tool_refuses_unsafe_paths_and_writes_nothing(
    repo: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("keep\n")
    (repo / "link").symlink_to(outside, target_is_directory=True)
    (repo / "gitlink").symlink_to(repo / ".git", target_is_directory=True)
    before_repo, before_outside = snapshot(repo), snapshot(outside)
    for path in ("../outside/new.txt", str(outside / "new.txt"), "link/secret.txt",
                 "link/new.txt", ".git/config", "gitlink/config", ".git/hooks/pre-commit"):  # fmt: skip
        ok, text = call(repo, "write_file", path=path, content="pwned\n")
        assert not ok
        assert text.startswith("error: refused")
        ok, text = call(repo, "replace_in_file", path=path, old="keep", new="pwned")
        assert not ok
        assert text.startswith("error: refused")
    assert snapshot(repo) == before_repo
    assert snapshot(outside) == before_outside
    assert not (outside / "new.txt").exists()


def test_read_file_numbers_lines_and_caps_long_files(repo: Path) -> None:
    (repo / "long.txt").write_text("".join(f"line {n}\n" for n in range(1, 1001)))
    ok, text = call(repo, "read_file", path="long.txt", start_line=10, end_line=12)
    assert ok
    assert text.splitlines() == ["   10| line 10", "   11| line 11", "   12| line 12"]
    ok, text = call(repo, "read_file", path="long.txt")
    assert "  400| line 400" in text
    assert "line 401" not in text
    assert "start_line=401" in text


def test_list_files_skips_git_dependencies_and_virtualenvs(repo: Path) -> None:
    ok, text = call(repo, "list_files")
    assert ok
    assert text.splitlines() == ["src/calc.py", "src/dup.py"]
    assert call(repo, "list_files", pattern="calc*")[1] == "src/calc.py"


def test_list_files_caps_the_listing_and_says_how_many_more(repo: Path) -> None:
    (repo / "gen").mkdir()
    for n in range(400):
        (repo / "gen" / f"f{n:03}.txt").write_text("")
    lines = call(repo, "list_files", path="gen")[1].splitlines()
    assert len(lines) == MAX_LIST_ENTRIES + 1
    assert lines[-1] == "… and 100 more (narrow with path or pattern)"


def test_search_finds_regex_and_falls_back_to_literal_for_invalid_regex(repo: Path) -> None:
    assert call(repo, "search", pattern=r"a\s-\sb")[1] == "src/calc.py:2: return a - b"
    (repo / "odd.txt").write_text("call f(x\n")
    assert call(repo, "search", pattern="f(x")[1] == "odd.txt:1: call f(x"


def test_search_stops_at_the_hit_cap(repo: Path) -> None:
    (repo / "many.txt").write_text("hit\n" * 500)
    text = call(repo, "search", pattern="hit")[1]
    assert len(text.splitlines()) == MAX_HITS + 1
    assert "stopped at" in text


def test_replace_in_file_requires_exactly_one_match(repo: Path) -> None:
    ok, text = call(repo, "replace_in_file", path="src/dup.py", old="x = 1", new="x = 2")
    assert not ok
    assert "matches 2 times" in text
    ok, text = call(repo, "replace_in_file", path="src/calc.py", old="a * b", new="a + b")
    assert not ok
    assert "0 matches" in text
    assert (repo / "src" / "dup.py").read_text() == "x = 1\nx = 1\n"
    ok, text = call(repo, "replace_in_file", path="src/calc.py", old="a - b", new="a + b")
    assert ok, text
    assert "line 2" in text
    assert (repo / "src" / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"


def test_write_file_creates_parent_directories(repo: Path) -> None:
    result = call_tool(repo, "write_file", json.dumps({"path": "pkg/new.py", "content": "a\nb\n"}))
    assert result.ok
    assert result.edited == "pkg/new.py"
    assert (repo / "pkg" / "new.py").read_text() == "a\nb\n"


@pytest.mark.parametrize(
    ("name", "raw", "message"),
    [
        ("read_file", '{"path": "src/calc.py"', "not valid JSON"),
        ("rm_rf", "{}", "unknown tool 'rm_rf'"),
        ("replace_in_file", '{"path": "src/calc.py"}', "missing required argument(s): old, new"),
        ("read_file", '{"path": 3}', "must be a string"),
        ("read_file", '["src/calc.py"]', "must be a JSON object"),
        ("read_file", '{"path": "src/calc.py", "mode": "w"}', "no argument 'mode'"),
    ],
)
def test_malformed_tool_calls_become_error_results(
    repo: Path, name: str, raw: str, message: str
) -> None:
    result = call_tool(repo, name, raw)
    assert not result.ok
    assert message in result.text


def test_finish_returns_the_summary_on_one_line(repo: Path) -> None:
    result = call_tool(repo, "finish", json.dumps({"summary": "fix add\n  sign"}))
    assert result.finished == "fix add sign"


def test_tool_specs_name_every_tool_with_required_arguments() -> None:
    specs = {s["function"]["name"]: s["function"] for s in tool_specs()}
    assert set(specs) == {
        "read_file", "list_files", "search", "replace_in_file", "write_file", "finish"
    }  # fmt: skip
    assert specs["replace_in_file"]["parameters"]["required"] == ["path", "old", "new"]


def test_mentioned_files_keeps_existing_repo_files_in_order(repo: Path) -> None:
    digest = (
        "FAILED tests/test_calc.py::test_add\n  at src/calc.py:2 in add\n"
        f"  at {repo.resolve()}/src/dup.py:1\n  at /usr/lib/python3.11/json.py:3\n"
        "  at missing.py:4\n  at .git/config:1\n  at src/calc.py:9\n"
    )
    assert mentioned_files(repo, digest) == [("src/calc.py", 2), ("src/dup.py", 1)]


def test_excerpt_windows_around_the_line_in_long_files(repo: Path) -> None:
    (repo / "long.txt").write_text("".join(f"line {n}\n" for n in range(1, 1001)))
    text = excerpt(repo, "long.txt", 700, max_lines=10)
    assert text.splitlines()[0] == "  695| line 695"
    assert "1000 lines in all" in text


def test_search_replace_blocks_parse_and_apply_with_the_unique_rule(repo: Path) -> None:
    reply = (
        "Fixing the sign.\n\n```python\nsrc/calc.py\n<<<<<<< SEARCH\n    return a - b\n"
        "=======\n    return a + b\n>>>>>>> REPLACE\n```\n\n"
        "`src/dup.py`\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n"
        "notes/new.md\n<<<<<<< SEARCH\n=======\nhello\n>>>>>>> REPLACE\n"
        "DONE: use + in add\n"
    )
    blocks = parse_blocks(reply)
    assert [b.path for b in blocks] == ["src/calc.py", "src/dup.py", "notes/new.md"]
    results = [apply_block(repo, b) for b in blocks]
    assert [r.ok for r in results] == [True, False, True]
    assert "matches 2 times" in results[1].text
    assert (repo / "src" / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert (repo / "src" / "dup.py").read_text() == "x = 1\nx = 1\n"
    assert (repo / "notes" / "new.md").read_text() == "hello\n"
    assert done_summary(reply) == "use + in add"


def test_search_replace_blocks_refuse_paths_outside_the_repo(repo: Path) -> None:
    before = snapshot(repo)
    reply = "../evil.py\n<<<<<<< SEARCH\n=======\nboom\n>>>>>>> REPLACE\n"
    (result,) = [apply_block(repo, b) for b in parse_blocks(reply)]
    assert not result.ok
    assert "refused" in result.text
    assert snapshot(repo) == before
    assert not (repo.parent / "evil.py").exists()


def test_unterminated_block_is_a_parse_error() -> None:
    with pytest.raises(ToolError, match="unterminated"):
        parse_blocks("a.py\n<<<<<<< SEARCH\nx\n=======\ny\n")


# ---- issue 12: hostile tool calls never crash the run nor escape the repository ----


def _call(repo: Path, name: str, **args: object) -> tuple[bool, str]:
    result = call_tool(repo, name, json.dumps(args))
    return result.ok, result.text


def test_tool_calls_with_nul_bytes_surrogates_and_symlink_loops_become_error_results(
    repo: Path,
) -> None:
    (repo / "loop").symlink_to("loop")
    cases = [
        ("read_file", {"path": "src/\x00calc.py"}),
        ("write_file", {"path": "a\x00b.py", "content": "x"}),
        ("write_file", {"path": "new.py", "content": "bad \ud800 surrogate"}),
        ("write_file", {"path": "\ud800.py", "content": "x"}),
        ("read_file", {"path": "loop"}),
        ("write_file", {"path": "loop/x.py", "content": "x"}),
        ("list_files", {"path": "loop"}),
        ("search", {"pattern": "x", "path": "loop"}),
    ]
    for name, args in cases:
        ok, text = _call(repo, name, **args)
        assert not ok, (name, args, text)
        assert text.startswith("error:"), text


def test_tools_refuse_git_in_any_case(repo: Path) -> None:
    for path in (".GIT/config", ".Git/hooks/pre-commit", "src/../.git/config"):
        ok, text = _call(repo, "write_file", path=path, content="#!/bin/sh\n")
        assert not ok, text
    assert not (repo / ".GIT").exists() or (repo / ".GIT").samefile(repo / ".git")


def test_search_never_reads_through_a_symlink_out_of_the_repo_or_into_git(
    repo: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("TOPSECRET outside the repository\n")
    (repo / ".git" / "config").write_text("TOPSECRET in git config\n")
    (repo / "src" / "out.txt").symlink_to(outside)
    (repo / "src" / "gitcfg").symlink_to(repo / ".git" / "config")
    ok, text = _call(repo, "search", pattern="TOPSECRET")
    assert ok
    assert "outside the repository" not in text
    assert "in git config" not in text


def test_search_with_a_catastrophic_regex_returns_quickly(repo: Path) -> None:
    (repo / "src" / "a.txt").write_text("a" * 40 + "!\n")
    import time

    started = time.monotonic()
    ok, _ = _call(repo, "search", pattern="^(a+)+$")
    assert ok
    assert time.monotonic() - started < 30  # a hang guard: unbounded, this line alone takes minutes


def test_tool_calls_after_the_agent_deadline_are_refused(repo: Path) -> None:
    import time

    result = call_tool(repo, "read_file", '{"path": "src/calc.py"}', deadline=time.monotonic() - 1)
    assert not result.ok
    assert "timeout" in result.text

"""``greenloop hook post-tool``: real pytest runs in tmp repos, fed in the payload shapes Claude Code
2.1.197 and Gemini CLI 0.61.0 send (recorded from the real CLIs; tests/test_tool_output_e2e.py
drives the CLIs themselves)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from greenloop.digest import estimate_tokens
from greenloop.integrations.tool_command import find_verifier
from greenloop.integrations.tool_digest import KEEP, PASS_CAP
from greenloop.integrations.tool_gate import nothing_to_do
from greenloop.integrations.tool_hosts import wrap
from greenloop.integrations.tool_output import MAX_INPUT, HookAnswer, run_post_tool
from limits import hang
from secret_shapes import SHAPES

CALC = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TESTS = "from calc import add\n\n\n" + "\n\n".join(
    f"def test_add_{i}():\n    assert add({i}, 1) == {i + 1}\n" for i in range(12)
)
OTHER = "def test_other():\n    assert True\n"
PYTEST = f"{sys.executable} -m pytest -p no:cacheprovider"
ENV: dict[str, str] = {}


def pytest_output(repo: Path, *args: str) -> tuple[str, int]:
    """A real pytest run in the repo: its merged output and exit code, as the agent's shell got it."""
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    return run.stdout + run.stderr, run.returncode


def claude_post(repo: Path, command: str, output: str, exit_code: int) -> bytes:
    """Claude Code's payload: PostToolUse when the command exited 0, else PostToolUseFailure."""
    base = {"session_id": "s", "cwd": str(repo), "tool_name": "Bash"}
    tool_input = {"command": command, "description": "run"}
    if exit_code:
        event = {
            "hook_event_name": "PostToolUseFailure",
            "error": f"Exit code {exit_code}\n{output}",
        }
        return json.dumps({**base, **event, "tool_input": tool_input}).encode()
    response = {"stdout": output, "stderr": "", "interrupted": False, "isImage": False}
    event = {"hook_event_name": "PostToolUse", "tool_response": response}
    return json.dumps({**base, **event, "tool_input": tool_input}).encode()


def wrapped_post(repo: Path, command: str, output: str, exit_code: int) -> bytes:
    """PostToolUse of a command the PreToolUse answer wrapped: it exits 0 and ends with its code."""
    stdout = f"{output}\n[greenloop: exit {exit_code}]"
    response = {"stdout": stdout, "stderr": "", "interrupted": False, "isImage": False}
    payload = {
        "hook_event_name": "PostToolUse",
        "cwd": str(repo),
        "tool_name": "Bash",
        "tool_input": {"command": wrap(command), "description": "run"},
        "tool_response": response,
    }
    return json.dumps(payload).encode()


def gemini_after(repo: Path, command: str, output: str, exit_code: int) -> bytes:
    tail = f"\nExit Code: {exit_code}" if exit_code else ""
    content = f"<untrusted_context>\nOutput: {output}{tail}\nProcess Group PGID: 4242\n</untrusted_context>"
    payload = {
        "hook_event_name": "AfterTool",
        "cwd": str(repo),
        "tool_name": "run_shell_command",
        "tool_input": {"command": command},
        "tool_response": {"llmContent": content, "returnDisplay": output},
    }
    return json.dumps(payload).encode()


def replaced(answer: HookAnswer) -> str:
    """The text the model reads instead of the output, in whichever host's field it went."""
    assert answer.exit_code == 0, answer.message
    data: dict[str, Any] = json.loads(answer.reply)
    if "reason" in data:
        return str(data["reason"])
    specific = data["hookSpecificOutput"]
    if "updatedToolOutput" in specific:
        return str(specific["updatedToolOutput"]["stdout"])
    return str(specific["additionalContext"])


@pytest.fixture
def calc_repo(make_repo: Callable[..., Path]) -> Path:
    return make_repo({"calc.py": CALC, "test_calc.py": TESTS, "test_other.py": OTHER})


# ------------------------------------------------------------------ which commands are verifiers


@pytest.mark.parametrize(
    ("command", "runner"),
    [
        ("pytest -q", "pytest"),
        ("cd backend && FOO=1 uv run python -m pytest", "pytest"),
        (".venv/bin/python3 -m pytest tests", "pytest"),
        ("npm test", "npm test"),
        ("pnpm run test:unit", "pnpm test:unit"),
        ("yarn lint", "yarn lint"),
        ("npx vitest run", "vitest"),
        ("timeout 120 npx jest --ci", "jest"),
        ("node --test", "node --test"),
        ("go test ./...", "go test"),
        ("cargo clippy --all-targets", "cargo clippy"),
        ("npx tsc --noEmit", "tsc"),
        ("ruff check .", "ruff"),
        ("uv run mypy src", "mypy"),
        ("make test", "make test"),
    ],
)
def test_a_known_runner_is_a_verifier_behind_cd_env_and_wrappers(command: str, runner: str) -> None:
    found = find_verifier(command)
    assert found is not None
    assert found.runner == runner
    assert found.partial == ()


@pytest.mark.parametrize(
    "command",
    [
        "ls node_modules",
        "git commit -m 'make go test pass'",
        "npm install",
        "ruff format",
        "npx jest --watch",
        "pytest --collect-only",
        "cat pytest.ini",
    ],
)
def test_a_command_that_runs_no_verifier_is_not_one(command: str) -> None:
    assert find_verifier(command) is None


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("pytest -k add", "-k add"),
        ("pytest --lf", "--lf"),
        ("pytest -xq", "-x"),
        ("pytest tests/test_calc.py::test_add_1", "only tests/test_calc.py::test_add_1"),
        ("pytest || true", "`|| true`"),
        ("pytest -q 2>&1 | tail -20", "piped into `tail`"),
        ("npx jest --passWithNoTests", "--passWithNoTests"),
        ("go test -run TestParse ./...", "-run TestParse"),
        ("cargo test parse_", "only tests matching parse_"),
        ("ruff check src/a.py", "only src/a.py"),
    ],
)
def test_a_partial_invocation_says_why_it_is_partial(command: str, reason: str) -> None:
    found = find_verifier(command)
    assert found is not None
    assert any(reason in why for why in found.partial), found.partial


def test_a_configured_stage_is_a_verifier_though_it_names_no_runner(
    make_repo: Callable[..., Path],
) -> None:
    stage = '[[tool.greenloop.stage]]\nname = "tests"\nrun = "./scripts/check.sh"\n'
    script = "#!/bin/sh\necho 'FAILED tests/test_a.py::test_x - assert 1 == 2'\nexit 1\n"
    repo = make_repo({"pyproject.toml": stage, "scripts/check.sh": script})
    answer = run_post_tool(claude_post(repo, "./scripts/check.sh", "boom\n", 1), environ=ENV)
    assert answer == HookAnswer()  # "boom" no parser reads: passed through untouched
    # but the command was recognised as a verifier: its output was saved
    assert (repo / ".git" / "greenloop" / "tool-output").is_dir()


# ------------------------------------------------------------------ digests of real runs


def test_a_failing_real_pytest_run_becomes_its_digest_with_where_the_output_is(
    calc_repo: Path,
) -> None:
    output, code = pytest_output(calc_repo)
    assert code == 1
    seen = replaced(run_post_tool(wrapped_post(calc_repo, PYTEST, output, code), environ=ENV))
    assert "12 failed, 1 passed" in seen
    assert "FIRST FAILING TEST: test_calc.py::test_add_0" in seen
    assert "at test_calc.py:5" in seen  # the first failure's own frame
    saved = seen.rsplit("Full output (redacted): ", 1)[1].split(" ")[0]
    assert output.rstrip("\n") in (calc_repo / saved).read_text()
    assert estimate_tokens(seen) < estimate_tokens(output)


def test_claude_code_post_tool_use_failure_gets_the_digest_as_context(calc_repo: Path) -> None:
    output, code = pytest_output(calc_repo)
    answer = run_post_tool(claude_post(calc_repo, PYTEST, output, code), environ=ENV)
    specific = json.loads(answer.reply)["hookSpecificOutput"]
    assert specific["hookEventName"] == "PostToolUseFailure"
    assert "FIRST FAILING TEST: test_calc.py::test_add_0" in specific["additionalContext"]


def test_gemini_after_tool_replaces_the_output_by_deny_and_reason(calc_repo: Path) -> None:
    output, code = pytest_output(calc_repo)
    answer = run_post_tool(
        gemini_after(calc_repo, PYTEST, output, code), host="gemini", environ=ENV
    )
    data = json.loads(answer.reply)
    assert data["decision"] == "deny"
    assert "FIRST FAILING TEST: test_calc.py::test_add_0" in data["reason"]
    assert data["hookSpecificOutput"]["tool_output"] == data["reason"]


def test_a_green_run_becomes_one_line_with_its_counts(make_repo: Callable[..., Path]) -> None:
    repo = make_repo({"calc.py": FIXED, "test_calc.py": TESTS})
    output, code = pytest_output(repo)
    seen = replaced(run_post_tool(claude_post(repo, PYTEST, output, code), environ=ENV))
    assert seen.startswith("greenloop: green: 12 passed (pytest).")
    assert "\n" not in seen
    assert estimate_tokens(seen) <= 60


def test_the_claude_reply_keeps_the_bash_output_shape(make_repo: Callable[..., Path]) -> None:
    repo = make_repo({"calc.py": FIXED, "test_calc.py": TESTS})
    output, code = pytest_output(repo)
    answer = run_post_tool(claude_post(repo, PYTEST, output, code), environ=ENV)
    updated = json.loads(answer.reply)["hookSpecificOutput"]["updatedToolOutput"]
    assert set(updated) == {"stdout", "stderr", "interrupted", "isImage"}


def test_a_k_run_says_how_many_of_the_collected_tests_it_ran(calc_repo: Path) -> None:
    output, code = pytest_output(calc_repo, "-k", "other")
    assert code == 0
    seen = replaced(
        run_post_tool(claude_post(calc_repo, f"{PYTEST} -k other", output, 0), environ=ENV)
    )
    assert "Partial run (-k other): ran 1 of 13 tests: not a verdict on the suite." in seen


def test_a_one_file_run_is_measured_against_the_last_full_run(
    make_repo: Callable[..., Path],
) -> None:
    repo = make_repo({"calc.py": FIXED, "test_calc.py": TESTS, "test_other.py": OTHER})
    full, _ = pytest_output(repo)
    run_post_tool(claude_post(repo, PYTEST, full, 0), environ=ENV)
    one, code = pytest_output(repo, "test_other.py")
    seen = replaced(
        run_post_tool(claude_post(repo, f"{PYTEST} test_other.py", one, code), environ=ENV)
    )
    assert "Partial run (only test_other.py): ran 1 of 13 tests" in seen


def test_or_true_on_a_failing_run_is_not_called_green(calc_repo: Path) -> None:
    output, _ = pytest_output(calc_repo)
    seen = replaced(
        run_post_tool(claude_post(calc_repo, f"{PYTEST} || true", output, 0), environ=ENV)
    )
    assert "can't be trusted" in seen
    assert "green" not in seen.split("\n")[0].lower()


def test_output_no_parser_reads_passes_through_untouched(calc_repo: Path) -> None:
    text = "the frobnicator says: 3 widgets are out of alignment\n"
    assert run_post_tool(claude_post(calc_repo, "make test", text, 2), environ=ENV) == HookAnswer()


def test_a_long_unparsed_output_passes_through_as_head_and_tail(calc_repo: Path) -> None:
    text = "".join(f"line {i} of something no parser knows\n" for i in range(5000))
    # wrapped: Claude Code hands PostToolUseFailure only the first 10,000 characters
    seen = replaced(run_post_tool(wrapped_post(calc_repo, "make test", text, 2), environ=ENV))
    assert seen.startswith("line 0 of")
    assert "line 4999 of" in seen
    assert "characters cut by greenloop" in seen
    assert len(seen) < PASS_CAP + 500


def test_a_secret_in_the_output_never_reaches_the_model_or_the_saved_file(calc_repo: Path) -> None:
    line, secret = SHAPES[2]
    output, code = pytest_output(calc_repo)
    output = output.replace("test session starts", f"test session starts {line}")
    answer = run_post_tool(claude_post(calc_repo, PYTEST, output, code), environ=ENV)
    assert secret not in answer.reply
    for saved in (calc_repo / ".git" / "greenloop" / "tool-output").glob("*.log"):
        assert secret not in saved.read_text()


def test_only_the_newest_saved_outputs_are_kept(calc_repo: Path) -> None:
    output, code = pytest_output(calc_repo)
    store = calc_repo / ".git" / "greenloop" / "tool-output"
    store.mkdir(parents=True)
    for i in range(KEEP + 5):
        (store / f"20000101-0000{i:02d}-1.log").write_text("old")
    run_post_tool(claude_post(calc_repo, PYTEST, output, code), environ=ENV)
    logs = sorted(store.glob("*.log"))
    assert len(logs) == KEEP
    assert "old" not in logs[-1].read_text()


# ------------------------------------------------------------------ the cheap path and the switches


def test_a_non_verifier_command_gets_no_reply(calc_repo: Path) -> None:
    assert (
        run_post_tool(claude_post(calc_repo, "ls -la", "calc.py\n", 0), environ=ENV) == HookAnswer()
    )


def with_post_tool_entry(repo: Path) -> None:
    """``greenloop install claude``'s PostToolUse entry, which reads a wrapped command back."""
    hooks = {
        "PostToolUse": [
            {
                "matcher": "Bash",
                "hooks": [{"type": "command", "command": "greenloop hook post-tool"}],
            }
        ]
    }
    (repo / ".claude").mkdir(exist_ok=True)
    (repo / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))


def test_pre_tool_use_wraps_a_verifier_so_its_exit_code_reaches_post_tool_use(
    calc_repo: Path, tmp_path: Path
) -> None:
    with_post_tool_entry(calc_repo)
    (tmp_path / ".claude").mkdir()  # the user's own rule runs the command as the agent wrote it
    rules = {"permissions": {"allow": [f"Bash({PYTEST}:*)"]}}
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps(rules))
    payload = {
        "hook_event_name": "PreToolUse",
        "permission_mode": "default",
        "cwd": str(calc_repo),
        "tool_name": "Bash",
        "tool_input": {"command": PYTEST, "description": "tests"},
    }
    answer = run_post_tool(json.dumps(payload).encode(), environ={"HOME": str(tmp_path)})
    specific = json.loads(answer.reply)["hookSpecificOutput"]
    assert specific["permissionDecision"] == "allow"
    assert f"Bash({PYTEST}:*)" in specific["permissionDecisionReason"]
    updated = specific["updatedInput"]
    assert updated["description"] == "tests"
    run = subprocess.run(
        ["bash", "-c", updated["command"]],
        cwd=calc_repo,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0
    assert run.stdout.rstrip().endswith("[greenloop: exit 1]")


def test_pre_tool_use_wraps_nothing_without_the_post_tool_use_entry_that_reads_it_back(
    calc_repo: Path,
) -> None:
    # the wrapped command exits 0 whatever the tests did: only greenloop's PostToolUse reads
    # the exit code back, so without that entry (uninstalled, or never installed) no wrap
    payload = {
        "hook_event_name": "PreToolUse",
        "cwd": str(calc_repo),
        "tool_name": "Bash",
        "tool_input": {"command": PYTEST},
    }
    assert run_post_tool(json.dumps(payload).encode(), environ=ENV) == HookAnswer()


@pytest.mark.parametrize(
    "tool_input", [{"command": "git status"}, {"command": "pytest", "run_in_background": True}]
)
def test_pre_tool_use_leaves_other_commands_as_they_are(
    calc_repo: Path, tool_input: dict[str, Any]
) -> None:
    payload = {
        "hook_event_name": "PreToolUse",
        "cwd": str(calc_repo),
        "tool_name": "Bash",
        "tool_input": tool_input,
    }
    assert run_post_tool(json.dumps(payload).encode(), environ=ENV) == HookAnswer()


def test_the_environment_variable_turns_it_off_for_one_call(calc_repo: Path) -> None:
    output, code = pytest_output(calc_repo)
    payload = claude_post(calc_repo, PYTEST, output, code)
    assert run_post_tool(payload, environ={"GREENLOOP_TOOL_OUTPUT": "0"}) == HookAnswer()


def test_the_config_key_turns_it_off_for_the_project(make_repo: Callable[..., Path]) -> None:
    files = {
        "calc.py": CALC,
        "test_calc.py": TESTS,
        "pyproject.toml": "[tool.greenloop]\ntool_output = false\n",
    }
    repo = make_repo(files)
    output, code = pytest_output(repo)
    assert run_post_tool(claude_post(repo, PYTEST, output, code), environ=ENV) == HookAnswer()


# ------------------------------------------------------------------ bad input: one line, the session goes on


@pytest.mark.parametrize(
    ("raw", "host", "said"),
    [
        (b"{not json", None, "could not read the hook input (not JSON"),
        (b"[1, 2]", None, "a JSON list, not an object"),
        (b"\xff\xfe", None, "could not read the hook input"),
        (b"{}", "cursor", "unknown host 'cursor'"),
        (MAX_INPUT + 1, None, "over the 16 MB it reads"),
    ],
)
def test_bad_input_is_one_line_in_the_non_blocking_convention(
    raw: bytes | int, host: str | None, said: str
) -> None:
    answer = run_post_tool(raw, host=host, environ=ENV)
    assert answer.reply == ""
    assert answer.exit_code == 1
    assert said in answer.message
    assert "\n" not in answer.message


def test_a_50_mb_tool_output_through_the_cli_is_one_line_and_no_reply(calc_repo: Path) -> None:
    output = "x" * (50 * 1024 * 1024)
    payload = claude_post(calc_repo, PYTEST, output, 1)
    run = subprocess.run(
        [sys.executable, "-m", "greenloop", "hook", "post-tool"],
        cwd=calc_repo,
        input=payload,
        capture_output=True,
        timeout=hang(120),
        check=False,
    )
    assert run.returncode == 1
    assert run.stdout == b""
    lines = run.stderr.decode().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("greenloop: the hook input is 52.4 MB")


def test_the_cli_passes_a_non_verifier_through_with_no_output(calc_repo: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "greenloop", "hook", "post-tool"],
        cwd=calc_repo,
        input=claude_post(calc_repo, "ls -la", "calc.py\n", 0),
        capture_output=True,
        timeout=hang(60),
        check=False,
    )
    assert (run.returncode, run.stdout, run.stderr) == (0, b"", b"")


def test_the_cli_replies_for_a_verifier_on_gemini(calc_repo: Path) -> None:
    output, code = pytest_output(calc_repo)
    run = subprocess.run(
        [sys.executable, "-m", "greenloop", "hook", "post-tool", "--host", "gemini"],
        cwd=calc_repo,
        input=gemini_after(calc_repo, PYTEST, output, code),
        capture_output=True,
        timeout=hang(120),
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "FIRST FAILING TEST: test_calc.py::test_add_0" in json.loads(run.stdout)["reason"]


def test_the_gate_looks_further_only_where_stages_are_configured(
    make_repo: Callable[..., Path],
) -> None:
    stage = '[[tool.greenloop.stage]]\nname = "tests"\nrun = "./check.sh"\n'
    configured = make_repo({"pyproject.toml": stage}, name="configured")
    plain = make_repo({"pyproject.toml": "[project]\nname = 'x'\n"}, name="plain")
    assert not nothing_to_do(claude_post(configured, "./check.sh", "", 0), {})
    assert nothing_to_do(claude_post(plain, "./check.sh", "", 0), {})
    assert not nothing_to_do(claude_post(plain, "npx vitest run", "", 0), {})
    assert nothing_to_do(claude_post(plain, "pytest", "", 0), {"GREENLOOP_TOOL_OUTPUT": "off"})


def test_where_stages_are_configured_a_command_naming_none_of_their_programs_is_let_through(
    make_repo: Callable[..., Path],
) -> None:
    stage = (
        '[[tool.greenloop.stage]]\nname = "tests"\nrun = "CI=1 ./check.sh --all"\n'
        "[[tool.greenloop.stage]]\nname = \"lint\"\nrun = 'lint-all src'\n"
    )
    repo = make_repo({"pyproject.toml": stage})
    for command in ("ls -la", "git diff", "cat README.md"):  # before config or git is loaded
        assert nothing_to_do(claude_post(repo, command, "x\n", 0), {}), command
    for command in ("./check.sh --all", "cd sub && lint-all src"):
        assert not nothing_to_do(claude_post(repo, command, "x\n", 0), {}), command
    answer = run_post_tool(claude_post(repo, "ls -la", "x\n", 0), environ=ENV)
    assert answer == HookAnswer()
    assert not (repo / ".git" / "greenloop").exists()  # nothing loaded, nothing written

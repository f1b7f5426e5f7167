"""The Stop hook end to end: real Stop-hook JSON through ``python -m greenloop hook claude-stop``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cli_process import alive
from limits import hang

PY = sys.executable
PYTEST = f"{PY} -m pytest -q -p no:cacheprovider"
CALC = "def add(a, b):\n    return a + b\n"
CALC_BUG = "def add(a, b):\n    return a - b\n"
TESTS = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
CONFIG = '[tool.greenloop]\nmax_iters = {max_iters}\n[[tool.greenloop.stage]]\nname = "test"\nrun = "{run}"\n'


def project(
    make_repo: Callable[..., Path],
    calc: str = CALC,
    *,
    run: str = PYTEST,
    max_iters: int = 5,
    tests: str = TESTS,
) -> Path:
    config = CONFIG.format(max_iters=max_iters, run=run)
    return make_repo({"calc.py": calc, "test_calc.py": tests, "pyproject.toml": config})


def stop_event(root: Path, session: str = "sess-1", *, active: bool = False) -> str:
    """The shape Claude Code sends to a Stop hook."""
    return json.dumps(
        {
            "session_id": session,
            "transcript_path": str(root / "transcript.jsonl"),
            "cwd": str(root),
            "permission_mode": "default",
            "hook_event_name": "Stop",
            "stop_hook_active": active,
        }
    )


def hook(
    stdin: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PY, "-m", "greenloop", "hook", "claude-stop"],
        check=False,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=hang(120),
        cwd=cwd,
    )


def reply(out: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert out.returncode == 0, out.stderr
    data: dict[str, Any] = json.loads(out.stdout)
    return data


def digest_of(data: dict[str, Any]) -> str:
    """The digest of a blocking Stop reply: Claude Code's additionalContext, beside a short reason."""
    assert data["decision"] == "block"
    assert data["hookSpecificOutput"]["hookEventName"] == "Stop"
    return str(data["hookSpecificOutput"]["additionalContext"])


def test_green_suite_allows_the_stop_silently(make_repo: Callable[..., Path]) -> None:
    root = project(make_repo)
    out = hook(stop_event(root))
    assert out.returncode == 0, out.stderr
    assert out.stdout == ""


def test_failing_suite_blocks_the_stop_with_the_digest(make_repo: Callable[..., Path]) -> None:
    root = project(make_repo, CALC_BUG)
    data = reply(hook(stop_event(root)))
    assert "test_calc.py::test_add" in digest_of(data)
    assert "The verifier failed" in digest_of(data)
    assert "systemMessage" not in data
    state = json.loads((root / ".git" / "greenloop" / "hooks" / "sess-1.json").read_text())
    assert state["blocks"] == 1


def test_environment_failure_tells_the_user_and_never_blocks(
    make_repo: Callable[..., Path],
) -> None:
    tests = "import psycopg2_not_installed\n\n\ndef test_db():\n    assert psycopg2_not_installed\n"
    root = project(make_repo, tests=tests)
    data = reply(hook(stop_event(root)))
    assert "decision" not in data
    assert "ENVIRONMENT FAILURE" in data["systemMessage"]
    assert "psycopg2_not_installed" in data["systemMessage"]


def test_untrusted_green_tells_the_user_and_never_blocks(make_repo: Callable[..., Path]) -> None:
    root = project(make_repo, CALC_BUG, run=f"{PYTEST} || true")
    data = reply(hook(stop_event(root)))
    assert "decision" not in data
    assert "UNTRUSTED GREEN" in data["systemMessage"]
    assert "|| true" in data["systemMessage"]


def test_bound_allows_the_stop_after_max_iters_blocks_even_if_stop_hook_active_lies(
    make_repo: Callable[..., Path],
) -> None:
    root = project(make_repo, CALC_BUG, max_iters=2)
    # Each attempt fails differently (no repeat), and the flag always says "not continuing".
    attempts = ("return a - b", "return a * b", "return 42")
    replies = []
    for body in attempts:
        (root / "calc.py").write_text(f"def add(a, b):\n    {body}\n")
        replies.append(reply(hook(stop_event(root, active=False))))
    assert [r.get("decision") for r in replies] == ["block", "block", None]
    assert "after 2 blocked stops" in replies[2]["systemMessage"]
    assert "max_iters = 2" in replies[2]["systemMessage"]


def test_same_failure_twice_in_a_row_allows_the_stop(make_repo: Callable[..., Path]) -> None:
    root = project(make_repo, CALC_BUG)
    first = reply(hook(stop_event(root)))
    second = reply(hook(stop_event(root, active=True)))
    assert first["decision"] == "block"
    assert "decision" not in second
    assert "same failure came back unchanged" in second["systemMessage"]


def test_green_resets_the_session_so_later_failures_block_again(
    make_repo: Callable[..., Path],
) -> None:
    root = project(make_repo, CALC_BUG, max_iters=1)
    assert reply(hook(stop_event(root)))["decision"] == "block"
    (root / "calc.py").write_text(CALC)
    assert hook(stop_event(root, active=True)).stdout == ""
    (root / "calc.py").write_text(CALC_BUG)
    assert reply(hook(stop_event(root)))["decision"] == "block"


def test_sessions_are_bounded_separately(make_repo: Callable[..., Path]) -> None:
    root = project(make_repo, CALC_BUG, max_iters=1)
    assert reply(hook(stop_event(root, "a")))["decision"] == "block"
    assert reply(hook(stop_event(root, "b")))["decision"] == "block"


def test_malformed_stdin_allows_the_stop_and_says_why(tmp_path: Path) -> None:
    data = reply(hook("this is not json", cwd=tmp_path))
    assert "decision" not in data
    assert "could not read the Stop hook input" in data["systemMessage"]


def test_a_repo_without_a_verifier_allows_the_stop_and_says_why(
    make_repo: Callable[..., Path],
) -> None:
    root = make_repo({"README.md": "nothing to verify\n"})
    data = reply(hook(stop_event(root)))
    assert "decision" not in data
    assert "no verifier found" in data["systemMessage"]


def test_a_cwd_outside_git_keeps_its_state_in_the_cache_dir(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    (root / "calc.py").write_text(CALC_BUG)
    (root / "test_calc.py").write_text(TESTS)
    (root / "pyproject.toml").write_text(CONFIG.format(max_iters=5, run=PYTEST))
    cache = tmp_path / "cache"
    out = hook(stop_event(root), env={**os.environ, "XDG_CACHE_HOME": str(cache)})
    assert reply(out)["decision"] == "block"
    assert list(cache.glob("greenloop/hooks/*/sess-1.json"))


def test_stop_is_allowed_in_a_green_flat_layout_repo_with_detection_only(
    make_repo: Callable[..., Path],
) -> None:
    # no configured command: detection must pick `python -m pytest`, or the package doesn't import
    from test_check import flat_layout_repo

    root = flat_layout_repo(make_repo)
    out = hook(stop_event(root))
    assert out.returncode == 0, out.stderr
    assert out.stdout == "", out.stdout


def test_stop_is_blocked_in_a_failing_flat_layout_repo_with_the_detected_python_m_pytest(
    make_repo: Callable[..., Path],
) -> None:
    # the counterpart of the allowed stop: detection really ran the suite (and the package imported)
    from test_check import flat_layout_repo

    root = flat_layout_repo(make_repo)
    (root / "flatpkg" / "__init__.py").write_text(CALC_BUG)
    data = reply(hook(stop_event(root)))
    digest = digest_of(data)
    assert "`.venv/bin/python -m pytest`" in digest, digest
    assert "tests/test_flat.py::test_add" in digest
    assert "ModuleNotFoundError" not in digest


def test_a_hook_ended_by_sigterm_stops_its_running_verifier(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    # Claude Code ends a hook that outlives its timeout; the suite it started must not run on
    pid_file = tmp_path / "verifier.pid"
    slow = (
        f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)\n"
    )
    config = CONFIG.format(max_iters=5, run=f"{PY} slow.py")
    root = make_repo({"slow.py": slow, "pyproject.toml": config})
    proc = subprocess.Popen(
        [PY, "-m", "greenloop", "hook", "claude-stop"],
        cwd=root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None
    proc.stdin.write(stop_event(root))
    proc.stdin.close()
    deadline = time.monotonic() + hang(60)
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline, "the verifier never started"
        time.sleep(0.05)
    verifier = int(pid_file.read_text())
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=hang(30))
    deadline = time.monotonic() + hang(60)  # a hang guard: the hook stops it within its kill grace
    while alive(verifier):
        assert time.monotonic() < deadline, f"the verifier {verifier} outlived the hook"
        time.sleep(0.05)


def test_the_hook_stands_down_when_claude_code_is_the_agent_of_a_greenloop_run(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    # inside `greenloop run --agent claude` a blocking hook would nest a second fix loop
    ran = tmp_path / "verifier-ran"
    root = project(make_repo, CALC_BUG, run=f"touch {ran} && {PYTEST}")
    out = hook(stop_event(root), env={**os.environ, "GREENLOOP_RUN_ID": "20261203-120000-abcd"})
    assert out.returncode == 0, out.stderr
    assert out.stdout == ""  # allowed, silently
    assert not ran.exists()
    assert reply(hook(stop_event(root)))["decision"] == "block"  # outside a run: blocks as ever

"""The goal recipe: Claude Code's ``/goal`` ends only on greenloop's trusted green.

``/goal CONDITION`` (Claude Code 2.1.332, headless with ``claude -p``) adds a Stop check of its
own: after each turn a small model reads the transcript and judges whether the condition holds.
Here that judge is fooled on purpose (the scripted server answers every judging request "met"),
as a judge reading only the transcript can be. With ``greenloop install claude --goal`` beside it,
Claude Code runs both Stop checks, and any block keeps the goal loop going: the red tree's stop is
blocked with the digest, a cheat (the failing test skipped) is blocked as an untrusted green, and
the loop ends only when the suite runs and passes, or at greenloop's own bound.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from agent_clis import clean_environ, require_cli
from greenloop.demo.script import Reply
from greenloop.demo.server import ReplayServer
from limits import hang

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
SKIPPED = "import pytest\nfrom calc import add\n\n\n@pytest.mark.skip\ndef test_add():\n"
PYPROJECT = (
    "[tool.greenloop]\nmax_iters = {max_iters}\n"
    '[[tool.greenloop.stage]]\nname = "tests"\nrun = "{python} -m pytest -q -p no:cacheprovider"\n'
)
DIGEST_MARK = "test_calc.py::test_add"
FOOLED_JUDGE = json.dumps({"ok": True, "reason": 'The assistant said: "All done."'})
GOAL = "/goal the tests in test_calc.py pass"


def goal_run(repo: Path, home: Path, script: list[Reply]) -> tuple[list[str], int, str]:
    """``claude -p "/goal …"`` with greenloop's goal hook installed: each main request's
    messages as text, how many times the goal's judge was asked, and the CLI's output."""
    environ = clean_environ(home, Path(sys.executable).parent, XDG_STATE_HOME=str(home / "state"))
    installed = subprocess.run(
        [sys.executable, "-m", "greenloop", "install", "claude", "--goal"],
        cwd=repo, env=environ, capture_output=True, text=True, check=False, timeout=hang(60),
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    path = [Path(sys.executable).parent, require_cli("claude")]
    with ReplayServer(script, api="messages", side_text=FOOLED_JUDGE) as server:
        environ = clean_environ(
            home,
            *path,
            ANTHROPIC_BASE_URL=server.root_url,
            ANTHROPIC_API_KEY="sk-ant-dummy",
            ANTHROPIC_MODEL="claude-sonnet-4-5",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_AUTOUPDATER="1",
        )
        out = subprocess.run(
            ["claude", "-p", "--output-format", "json", "--permission-mode", "acceptEdits", GOAL],
            cwd=repo, env=environ, capture_output=True, text=True, check=False,
            timeout=hang(600),
        )  # fmt: skip
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
        assert server.remaining == 0, out.stdout[-2000:]
        requests = [json.dumps(r.get("messages", [])) for r in server.main_requests]
        judged = sum(
            "stop_hook_active" in json.dumps(r) for r in server.requests if not r.get("tools")
        )
    return requests, judged, out.stdout


def red_repo(make_repo: Callable[..., Path], max_iters: int = 5) -> Path:
    return make_repo(
        {
            "calc.py": BUGGY,
            "test_calc.py": TEST,
            "pyproject.toml": PYPROJECT.format(python=sys.executable, max_iters=max_iters),
        }
    )


def edit(path: Path, old: str, new: str) -> list[Reply]:
    return [
        Reply.call("Read", file_path=str(path)),
        Reply.call("Edit", file_path=str(path), old_string=old, new_string=new),
    ]


def test_a_goal_run_on_a_red_tree_ends_only_at_greenloops_green(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    repo = red_repo(make_repo)
    script = [
        Reply.say("All done."),
        *edit(repo / "calc.py", "a - b", "a + b"),
        Reply.say("Fixed."),
    ]
    requests, judged, _ = goal_run(repo, tmp_path / "home", script)
    assert "session goal" in requests[0] or "/goal" in requests[0]  # the goal was set
    assert judged >= 1  # and its judge was asked: it said "met" on the red tree
    assert DIGEST_MARK in requests[1]  # greenloop blocked that stop: the goal loop went on
    assert (repo / "calc.py").read_text() == FIXED
    assert len(requests) == len(script)  # it ended at the green stop, not before


def test_a_cheat_that_skips_the_failing_test_does_not_end_the_goal(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    repo = red_repo(make_repo)
    test = repo / "test_calc.py"
    script = [
        Reply.say("All done."),
        *edit(test, "from calc import add\n\n\ndef test_add():\n", SKIPPED),  # the cheat
        Reply.say("The tests pass now."),  # pytest: 1 skipped, exit 0; the judge: "met"
        *edit(test, SKIPPED, "from calc import add\n\n\ndef test_add():\n"),
        *edit(repo / "calc.py", "a - b", "a + b"),
        Reply.say("Fixed for real."),
    ]
    requests, _, _ = goal_run(repo, tmp_path / "home", script)
    after_cheat = requests[4]  # the request that follows "The tests pass now."
    assert "not a trusted green" in after_cheat
    assert "no tests ran" in after_cheat
    assert test.read_text() == TEST
    assert (repo / "calc.py").read_text() == FIXED
    assert len(requests) == len(script)  # only the honest green ended it


def test_greenloops_bound_still_ends_a_goal_run_that_never_succeeds(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    repo = red_repo(make_repo, max_iters=2)
    calc = repo / "calc.py"
    script = [
        Reply.say("Done."),
        *edit(calc, "a - b", "a * b"),
        Reply.say("Done again."),
        *edit(calc, "a * b", "a - b - 1"),
        Reply.say("Done a third time."),
    ]
    requests, _, _ = goal_run(repo, tmp_path / "home", script)
    assert len(requests) == len(script)  # two blocks, then the stop was allowed
    [state] = (repo / ".git" / "greenloop" / "hooks").glob("*.json")
    assert json.loads(state.read_text())["blocks"] == 2

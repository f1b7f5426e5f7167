"""``greenloop install openhands`` and ``hook stop`` inside the OpenHands SDK's own agent loop.

The SDK (openhands-sdk, pinned in scripts/install_agent_clis.sh, in a venv of its own: it needs
Python 3.12) runs ``tests/openhands_agent.py``: an ``Agent`` against greenloop's scripted model
server on 127.0.0.1, with the hooks ``install`` wrote loaded as the SDK's docs say. A red tree's
stop is denied with the digest, the next model request carries it, the agent fixes the bug and
its stop at green is allowed; an agent whose every attempt fails ends after ``max_iters`` denials
(the SDK has no bound of its own on them); and ``uninstall`` gives the user's hooks file back
byte for byte after a real session ran with it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_clis import clean_environ, require_openhands_sdk
from greenloop.demo.script import Reply
from greenloop.demo.server import ReplayServer
from limits import hang

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
PYPROJECT = (
    "[tool.greenloop]\nmax_iters = {max_iters}\n"
    '[[tool.greenloop.stage]]\nname = "tests"\nrun = "{python} -m pytest -q -p no:cacheprovider"\n'
)
DIGEST_MARK = "test_calc.py::test_add"
AGENT = Path(__file__).with_name("openhands_agent.py")
# the user's own hooks file, written as people write it: install merges, uninstall gives it back
THEIRS = '{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "true"}]}]}}\n'


def greenloop(repo: Path, home: Path, *args: str) -> str:
    # the hook runs `greenloop hook stop`: this interpreter's bin dir comes first on PATH
    environ = clean_environ(home, Path(sys.executable).parent, XDG_STATE_HOME=str(home / "state"))
    out = subprocess.run(
        [sys.executable, "-m", "greenloop", *args],
        cwd=repo,
        env=environ,
        capture_output=True,
        text=True,
        check=False,
        timeout=hang(60),
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def run_sdk(repo: Path, home: Path, script: list[Reply]) -> tuple[dict[str, Any], list[str]]:
    """One conversation of the SDK's agent: its final status and hook runs, and each main model
    request's messages as text."""
    python = require_openhands_sdk()
    environ = clean_environ(
        home,
        Path(sys.executable).parent,
        LITELLM_LOCAL_MODEL_COST_MAP="True",  # else LiteLLM fetches its price list at import
        OPENHANDS_SUPPRESS_BANNER="1",
    )
    with ReplayServer(script, api="chat") as server:
        out = subprocess.run(
            [str(python), str(AGENT), str(repo), server.base_url],
            cwd=repo,
            env=environ,
            capture_output=True,
            text=True,
            check=False,
            timeout=hang(600),
        )
        requests = [json.dumps(r.get("messages", [])) for r in server.main_requests]
        assert server.remaining == 0, out.stderr[-3000:]
    assert out.returncode == 0, out.stderr[-3000:]
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result, requests


def red_repo(make_repo: Callable[..., Path], max_iters: int) -> Path:
    return make_repo(
        {
            "calc.py": BUGGY,
            "test_calc.py": TEST,
            "pyproject.toml": PYPROJECT.format(python=sys.executable, max_iters=max_iters),
            ".openhands/hooks.json": THEIRS,
        }
    )


def edit(repo: Path, old: str, new: str) -> Reply:
    return Reply.call("replace", path=str(repo / "calc.py"), old=old, new=new)


def test_the_sdk_agent_is_denied_on_a_red_tree_fixes_it_and_stops_at_green(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    repo = red_repo(make_repo, max_iters=3)
    home = tmp_path / "home"
    greenloop(repo, home, "install", "openhands")
    script = [Reply.say("All done."), edit(repo, "a - b", "a + b"), Reply.say("Fixed add().")]
    result, requests = run_sdk(repo, home, script)
    assert (repo / "calc.py").read_text() == FIXED
    assert result["status"] == "finished"
    assert DIGEST_MARK not in requests[0]
    assert DIGEST_MARK in requests[1]  # the stop right after "All done." was denied
    assert len(requests) == len(script)  # the stop at green was allowed
    stops = [h["blocked"] for h in result["hooks"] if h["event"] == "Stop"]
    assert stops == [True, False]


def test_an_sdk_session_that_never_succeeds_ends_within_greenloops_bound(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    repo = red_repo(make_repo, max_iters=2)
    home = tmp_path / "home"
    greenloop(repo, home, "install", "openhands")
    script = [  # every attempt fails, each differently (no "same failure" shortcut)
        Reply.say("Done."),
        edit(repo, "a - b", "a * b"),
        Reply.say("Done again."),
        edit(repo, "a * b", "a - b - 1"),
        Reply.say("Done a third time."),
    ]
    result, requests = run_sdk(repo, home, script)
    assert result["status"] == "finished"
    assert len(requests) == len(script)  # nothing after the last answer: the stop was allowed
    stops = [h["blocked"] for h in result["hooks"] if h["event"] == "Stop"]
    assert stops == [True, True, False]
    [state] = (repo / ".git" / "greenloop" / "hooks").glob("*.json")
    assert json.loads(state.read_text())["blocks"] == 2
    assert json.loads(state.read_text())["ended"] is True


def test_uninstall_gives_back_the_users_hooks_file_byte_for_byte_after_a_real_session(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    repo = make_repo({"calc.py": FIXED, "test_calc.py": TEST, ".openhands/hooks.json": THEIRS})
    home = tmp_path / "home"
    path = repo / ".openhands" / "hooks.json"
    greenloop(repo, home, "install", "openhands")
    assert path.read_text() != THEIRS
    result, _ = run_sdk(repo, home, [Reply.say("Nothing to do.")])
    events = [h["event"] for h in result["hooks"]]
    assert "SessionStart" in events  # the SDK read the merged file: theirs and ours both ran
    assert "Stop" in events
    assert "as it was before install" in greenloop(repo, home, "uninstall", "openhands")
    assert path.read_bytes() == THEIRS.encode()

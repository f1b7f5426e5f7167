"""The Stop hook remembers (issues 38, 39): what CI runs that the local gate lacks, said once a
session; outcomes recorded per tree, a known-flaky failure never blocking the agent's stop."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from test_claude_hook import PY, hook, reply, stop_event

WORKFLOW = (
    "on: [pull_request]\njobs:\n  t:\n    runs-on: ubuntu-latest\n    steps:\n"
    "      - run: ruff check .\n"
)
STAGE = '[[tool.greenloop.stage]]\nname = "test"\nrun = "{run}"\n'


def test_the_stop_hook_says_once_a_session_what_ci_also_runs(
    make_repo: Callable[..., Path],
) -> None:
    run = f"{PY} -m pytest -q -p no:cacheprovider"
    root = make_repo(
        {
            "test_x.py": "def test_x():\n    assert 1\n",
            "pyproject.toml": STAGE.format(run=run) + "[tool.greenloop]\ncache = false\n",
            ".github/workflows/ci.yml": WORKFLOW,
        }
    )
    first: dict[str, Any] = reply(hook(stop_event(root), cwd=root))
    assert "decision" not in first  # green: the stop is allowed
    assert first["systemMessage"] == (
        "greenloop: CI also runs `ruff check .` (.github/workflows/ci.yml:6); not run here "
        "(--stages-from both runs them too)"
    )
    again = hook(stop_event(root), cwd=root)
    assert "CI also runs" not in again.stdout  # once a session
    other = hook(stop_event(root, "sess-2"), cwd=root)
    assert "CI also runs" in other.stdout


FLAKY = """import os, pathlib

def test_sometimes():
    counter = pathlib.Path(os.environ["FLAKY_COUNTER"])
    n = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(n + 1))
    assert n % 3 != 2, "the network blinked"
"""


def test_a_stop_whose_only_failure_is_known_flaky_is_allowed_and_said_not_blocked(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    run = f"{PY} -m pytest -q -p no:cacheprovider"
    config = STAGE.format(run=run) + "[tool.greenloop]\ncache = false\n"
    root = make_repo({"test_flaky.py": FLAKY, "pyproject.toml": config})
    env = {**__import__("os").environ, "FLAKY_COUNTER": str(tmp_path / "counter")}
    answers = [
        json.loads(hook(stop_event(root), cwd=root, env=env).stdout or "{}") for _ in range(3)
    ]
    assert [a.get("decision") for a in answers[:2]] == [None, None]  # green, green
    third = answers[2]  # fails on the tree it passed on twice: known-flaky, not the agent's
    assert third.get("decision") is None
    assert "Only known-flaky tests failed: test_flaky.py::test_sometimes" in third["systemMessage"]
    listed = subprocess.run(
        [PY, "-m", "greenloop", "-C", str(root), "flaky"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "test_flaky.py::test_sometimes" in listed.stdout

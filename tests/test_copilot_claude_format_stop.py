"""Copilot CLI runs Claude-format Stop entries (``.claude/settings.json``) too.

The payloads below were recorded from Copilot CLI 1.0.102 with ``install claude`` and
``install copilot`` both in one repository: one stop fires its own ``agentStop`` and then the
Claude-format ``Stop``, stamped to the same millisecond. The Claude-format one is answered Copilot's
way (the digest in ``reason``: Copilot drops Claude Code's ``additionalContext``), and the second
entry of one stop runs nothing: one verification per stop, and no "came back unchanged after the
agent's last attempt" when there was no attempt in between.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from greenloop.integrations.claude_hook import respond
from greenloop.integrations.hosts import copilot

CALC = "def add(a, b):\n    return a - b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
STAGE = f'[[tool.greenloop.stage]]\nname = "tests"\nrun = "{sys.executable} -m pytest -q -p no:cacheprovider"\n'


def own(repo: Path, stamp_ms: int) -> dict[str, Any]:
    return {"sessionId": "e9b4", "timestamp": stamp_ms, "cwd": str(repo),
            "transcriptPath": "/h/.copilot/session-state/e9b4/events.jsonl",
            "stopReason": "end_turn", "stop_hook_active": False}  # fmt: skip


def claude_format(repo: Path, iso: str) -> dict[str, Any]:
    return {"hook_event_name": "Stop", "session_id": "e9b4", "timestamp": iso, "cwd": str(repo),
            "transcript_path": "/h/.copilot/session-state/e9b4/events.jsonl",
            "stop_reason": "end_turn", "stop_hook_active": False}  # fmt: skip


@pytest.fixture
def red_repo(make_repo: Callable[..., Path]) -> Path:
    return make_repo({"calc.py": CALC, "test_calc.py": TEST, "pyproject.toml": STAGE})


def answer(payload: dict[str, Any], repo: Path) -> tuple[str, str]:
    event, reply = respond(json.dumps(payload), default_cwd=repo, environ={"HOME": str(repo)})
    assert event.host == "copilot"
    return copilot.render(reply, event)


def test_copilots_claude_format_stop_gets_the_digest_in_reason(red_repo: Path) -> None:
    stdout, _ = answer(claude_format(red_repo, "2026-12-06T16:25:39.049Z"), red_repo)
    reply = json.loads(stdout)
    assert reply["decision"] == "block"
    assert "test_calc.py::test_add" in reply["reason"]  # the digest itself, not a pointer to it
    assert "hookSpecificOutput" not in reply


def test_both_entries_of_one_copilot_stop_verify_once_and_claim_no_attempt(
    red_repo: Path,
) -> None:
    first, _ = answer(own(red_repo, 1796574339049), red_repo)
    assert "test_calc.py::test_add" in json.loads(first)["reason"]
    second, err = answer(claude_format(red_repo, "2026-12-06T16:25:39.049Z"), red_repo)
    assert (second, err) == ("", "")  # the same stop: answered already, nothing run again
    state = json.loads(next((red_repo / ".git" / "greenloop" / "hooks").glob("*.json")).read_text())
    assert state["blocks"] == 1  # one block for the one stop
    assert state["stamp"] == 1796574339.049

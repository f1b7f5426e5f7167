"""Hook payloads a host on Windows sends: ``cwd`` and transcript paths as ``C:\\…`` (the hosts'
documented payload shapes, as the other hook tests feed them, with Windows paths in them), or
``/c/…`` where Git Bash spelled the folder. They are read: the host told right, the folder kept."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from greenloop.integrations.claude_hook import respond
from greenloop.integrations.hosts import claude, codex, cwd_of, detect
from greenloop.integrations.tool_gate import native_path
from greenloop.integrations.tool_hosts import detect_host, read_call

WIN_CWD = "C:\\Users\\me\\proj"
CLAUDE_STOP = {
    "session_id": "abc123",
    "transcript_path": "C:\\Users\\me\\.claude\\projects\\C--Users-me-proj\\abc123.jsonl",
    "cwd": WIN_CWD,
    "hook_event_name": "Stop",
    "stop_hook_active": False,
}
CODEX_STOP = {
    "session_id": "s1",
    "turn_id": "t1",
    "transcript_path": "C:\\Users\\me\\.codex\\sessions\\2026\\12\\06\\rollout.jsonl",
    "cwd": WIN_CWD,
    "hook_event_name": "Stop",
    "stop_hook_active": False,
}
CLAUDE_POST = {
    "session_id": "abc123",
    "transcript_path": "C:\\Users\\me\\.claude\\projects\\C--Users-me-proj\\abc123.jsonl",
    "cwd": WIN_CWD,
    "hook_event_name": "PostToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": "python -m pytest -q", "description": "run the tests"},
    "tool_response": {"stdout": "1 failed in 0.1s", "stderr": "", "interrupted": False},
}


def test_a_claude_stop_from_windows_is_claude_s_and_keeps_its_windows_folder() -> None:
    assert detect(CLAUDE_STOP, {}) == "claude"
    event = claude.parse(CLAUDE_STOP, Path("."))
    assert event.cwd == Path(WIN_CWD)
    assert event.session_id == "abc123"


def test_a_codex_stop_from_windows_is_codex_s_and_keeps_its_windows_folder() -> None:
    assert detect(CODEX_STOP, {}) == "codex"
    assert codex.parse(CODEX_STOP, Path(".")).cwd == Path(WIN_CWD)


def test_a_claude_post_tool_use_from_windows_is_read_with_its_command_and_folder() -> None:
    host = detect_host(dict(CLAUDE_POST), None)
    call = read_call(dict(CLAUDE_POST), host, Path("."))
    assert host == "claude"
    assert call is not None
    assert call.cwd == Path(WIN_CWD)
    assert call.command == "python -m pytest -q"
    assert call.output == "1 failed in 0.1s"


@pytest.mark.parametrize(
    ("given", "platform", "read"),
    [
        ("/c/Users/me/proj", "win32", "C:/Users/me/proj"),  # Git Bash's spelling, native Python
        ("/d", "win32", "D:/"),
        ("C:\\Users\\me\\proj", "win32", "C:\\Users\\me\\proj"),
        ("/c/Users/me/proj", "linux", "/c/Users/me/proj"),  # a Linux folder named c
        ("/home/me/proj", "win32", "/home/me/proj"),
    ],
)
def test_git_bash_s_drive_spelling_is_the_drive_only_on_windows(
    given: str, platform: str, read: str
) -> None:
    assert native_path(given, platform) == read
    assert cwd_of(given, Path("."), platform) == Path(read)


def test_an_empty_or_missing_cwd_falls_back_to_the_folder_the_hook_runs_in() -> None:
    assert cwd_of("", Path("/x")) == Path("/x")
    assert cwd_of(None, Path("/x")) == Path("/x")


CALC = "def add(a, b):\n    return a - b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
STAGE = f'[[tool.greenloop.stage]]\nname = "tests"\nrun = "{sys.executable} -m pytest -q -p no:cacheprovider"\n'


def test_copilot_s_claude_format_stop_with_a_windows_transcript_is_told_copilot_s(
    make_repo: Callable[..., Path],
) -> None:
    repo = make_repo({"calc.py": CALC, "test_calc.py": TEST, "pyproject.toml": STAGE})
    payload: dict[str, Any] = {
        "hook_event_name": "Stop",
        "session_id": "e9b4",
        "cwd": str(repo),
        "transcript_path": "C:\\Users\\me\\.copilot\\session-state\\e9b4\\events.jsonl",
        "stop_reason": "end_turn",
        "stop_hook_active": False,
    }  # Copilot CLI's Claude-format Stop, its session state under the Windows home
    assert detect(payload, {}) == "copilot"
    event, reply = respond(json.dumps(payload), default_cwd=repo, environ={"HOME": str(repo)})
    assert event.host == "copilot"
    assert "test_calc.py::test_add" in reply.block_reason  # verified and answered

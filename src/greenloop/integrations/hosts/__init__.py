"""The Stop hook's contract with each agent host: what it sends, what it must answer.

One module per host (``claude``, ``codex``, ``gemini``, ``copilot``, ``cursor``, ``vscode``,
``goose``, ``kimi``, ``openhands``), each with
``parse(data, default_cwd) -> StopEvent`` and ``render(reply, event) -> (stdout, stderr)``; this module
holds what they share and names the host a payload came from. Only the one host module a hook call
needs is imported: the hook runs on every agent turn.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from greenloop.integrations.tool_gate import native_path

HOSTS = ("claude", "codex", "gemini", "copilot", "cursor", "vscode", "goose", "kimi", "openhands")
MESSAGE_CHARS = 4000  # a user message is for a human glancing at the terminal

TYPE_CHECKING = False  # not typing's: the Stop hook imports this on every agent turn
if TYPE_CHECKING:
    from typing import Any


@dataclass(frozen=True, slots=True, kw_only=True)
class StopEvent:
    """A host's "the agent is about to stop" event, in the terms the hook decides on."""

    host: str
    event: str
    """The host's own name for it: Stop, SubagentStop, TaskCompleted, AfterAgent, agentStop, stop."""
    session_id: str
    """What the per-session bound is kept under (a subagent or task has its own)."""
    cwd: Path
    stop_hook_active: bool = False
    """The host says this stop follows a blocked one; only ever keeps a count, never bounds."""
    defer: str = ""
    """Why the tree is not verified at this stop (background work still running, an aborted turn)."""
    stamp: float = 0.0
    """When the host says the stop happened (epoch seconds; 0: it does not say). Copilot CLI runs
    its own and its Claude-format Stop entries for one stop: the second gets no run of its own."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HookReply:
    """The hook's answer, host-neutral: a block reason for the agent, a message for the user."""

    block_reason: str = ""
    """For the agent: its next instruction (only for real code failures)."""
    system_message: str = ""
    """For the user, never the model."""


Rendered = tuple[str, str]
"""What the hook process writes: (stdout: the host's reply, stderr); it always exits 0."""


def detect(data: Mapping[str, Any], environ: Mapping[str, str]) -> str:
    """The host a Stop payload came from, by its event name and the keys only that host sends."""
    name = data.get("hook_event_name")
    if name == "AfterAgent":
        return "gemini"
    if "hookEventName" in data:  # VS Code's common fields: camelCase, unlike every CLI's
        return "vscode"
    if "event_type" in data:  # the OpenHands SDK's HookEvent
        return "openhands"
    if "event" in data and "hook_event_name" not in data:  # Goose: the Open Plugins payload
        return "goose"
    if "conversation_id" in data or "workspace_roots" in data or name == "stop":
        return "cursor"
    if (
        "sessionId" in data
        or name in ("agentStop", "subagentStop")
        or _copilots_claude_format(data)
    ):
        return "copilot"
    if "turn_id" in data:
        return "codex"
    return from_environ(environ)


def _copilots_claude_format(data: Mapping[str, Any]) -> bool:
    """Copilot CLI running a Claude-format entry (``.claude/settings.json``): snake_case keys as
    Claude Code's, but an ISO ``timestamp`` and a transcript in Copilot's session state."""
    transcript = text(data.get("transcript_path")).replace("\\", "/")  # C:\\Users\\me\\.copilot
    return isinstance(data.get("timestamp"), str) or "/.copilot/" in transcript


def from_environ(environ: Mapping[str, str]) -> str:
    """The host, when the payload cannot say (unreadable): the variables each sets for its hooks."""
    if environ.get("GEMINI_SESSION_ID") or environ.get("GEMINI_PROJECT_DIR"):
        return "gemini"
    if environ.get("CURSOR_PROJECT_DIR") or environ.get("CURSOR_VERSION"):
        return "cursor"
    if environ.get("OPENHANDS_PROJECT_DIR"):
        return "openhands"
    return "claude"


def iso_seconds(stamp: object) -> float:
    """An ISO 8601 time as epoch seconds (0: none, or unreadable)."""
    if not isinstance(stamp, str):
        return 0.0
    from datetime import datetime

    try:
        return datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return 0.0


def text(value: object) -> str:
    return value if isinstance(value, str) else ""


def cwd_of(value: object, default: Path, platform: str = sys.platform) -> Path:
    """The payload's folder; on Windows Git Bash's ``/c/Users/…`` is ``C:/Users/…`` (a native
    Python reads ``/c/…`` as a folder ``c`` on the current drive)."""
    if not isinstance(value, str) or not value:
        return default
    return Path(native_path(value, platform))


def json_line(payload: Mapping[str, Any]) -> str:
    return json.dumps(payload) + "\n"


def clip(message: str) -> str:
    return message[:MESSAGE_CHARS]


def log_shape(hook: str, host: str, data: Mapping[str, object], environ: Mapping[str, str]) -> None:
    """``GREENLOOP_HOOK_LOG=DIR``: append the payload's shape (its event and field names, the
    names inside its tool response; never a value) to ``DIR/<host>.jsonl``, for
    ``scripts/host_drift.py`` to see what each host version sends. Off unless set; never raises."""
    folder = environ.get("GREENLOOP_HOOK_LOG")
    if not folder:
        return
    response = data.get("tool_response", data.get("toolResult", data.get("tool_result")))
    shape = {
        "hook": hook,
        "event": str(data.get("hook_event_name") or data.get("hookEventName") or ""),
        "fields": sorted(str(k) for k in data),
        "response": sorted(str(k) for k in response) if isinstance(response, dict) else
        type(response).__name__,
    }  # fmt: skip
    try:
        with open(os.path.join(folder, f"{host}.jsonl"), "a", encoding="utf-8") as out:
            out.write(json.dumps(shape) + "\n")
    except OSError:
        pass

"""Codex CLI: Stop and SubagentStop (``codex-rs/hooks`` schemas ``stop.command.input/output``).

Input: ``session_id``, ``turn_id``, ``cwd``, ``hook_event_name``, ``stop_hook_active``; SubagentStop
adds ``agent_id``. Reply: ``{"decision": "block", "reason": …}`` continues the turn with ``reason``
as the next prompt; ``systemMessage`` for the user. The output schema forbids any other key (no
``hookSpecificOutput``). Codex puts no cap on continuations: greenloop's bound is the only one.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from greenloop.integrations.hosts import (
    HookReply,
    StopEvent,
    clip,
    cwd_of,
    json_line,
    text,
)

TYPE_CHECKING = False  # not typing's: the Stop hook imports this on every agent turn
if TYPE_CHECKING:
    from typing import Any


def parse(data: Mapping[str, Any], default_cwd: Path) -> StopEvent:
    event = text(data.get("hook_event_name")) or "Stop"
    session = text(data.get("session_id")) or "no-session"
    agent = text(data.get("agent_id")) if event == "SubagentStop" else ""
    return StopEvent(
        host="codex",
        event=event,
        session_id=f"{session}-{agent}" if agent else session,
        cwd=cwd_of(data.get("cwd"), default_cwd),
        stop_hook_active=data.get("stop_hook_active") is True,
    )


def render(reply: HookReply, event: StopEvent) -> tuple[str, str]:
    if reply.block_reason:
        return json_line({"decision": "block", "reason": reply.block_reason}), ""
    if reply.system_message:
        return json_line({"systemMessage": clip(reply.system_message)}), ""
    return "", ""

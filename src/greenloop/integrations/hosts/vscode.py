"""VS Code agent hooks (Copilot Chat): Stop and SubagentStop (its hooks reference; VS Code does
not run here: by contract).

Input: the common fields ``timestamp`` (ISO 8601), ``cwd``, ``sessionId``, ``hookEventName``,
``transcript_path``, and ``stop_hook_active``; SubagentStop adds ``agent_id`` and ``agent_type``.
Reply: on ``Stop`` the documented ``{"hookSpecificOutput": {"hookEventName": "Stop", "decision":
"block", "reason": …}}``, with the same ``decision`` and ``reason`` at the top level too (the
Claude-compatible shape VS Code reads from Claude-format files); on ``SubagentStop`` the top-level
pair, as documented. ``reason`` is what the agent reads next: the digest. ``systemMessage`` is for
the user. Exit 0 always: exit 2 is a blocking error shown to the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from greenloop.integrations.hosts import (
    HookReply,
    StopEvent,
    clip,
    cwd_of,
    iso_seconds,
    json_line,
    text,
)

TYPE_CHECKING = False  # not typing's: the Stop hook imports this on every agent turn
if TYPE_CHECKING:
    from typing import Any


def parse(data: Mapping[str, Any], default_cwd: Path) -> StopEvent:
    event = text(data.get("hookEventName")) or text(data.get("hook_event_name")) or "Stop"
    session = text(data.get("sessionId")) or text(data.get("session_id")) or "no-session"
    agent = text(data.get("agent_id")) if event == "SubagentStop" else ""
    return StopEvent(
        host="vscode",
        event=event,
        session_id=f"{session}-{agent}" if agent else session,
        cwd=cwd_of(data.get("cwd"), default_cwd),
        stop_hook_active=data.get("stop_hook_active") is True,
        stamp=iso_seconds(data.get("timestamp")),
    )


def render(reply: HookReply, event: StopEvent) -> tuple[str, str]:
    if reply.block_reason:
        block = {"decision": "block", "reason": reply.block_reason}
        if event.event == "SubagentStop":
            return json_line(block), ""
        return json_line({**block, "hookSpecificOutput": {"hookEventName": "Stop", **block}}), ""
    if reply.system_message:
        return json_line({"systemMessage": clip(reply.system_message)}), ""
    return "", ""

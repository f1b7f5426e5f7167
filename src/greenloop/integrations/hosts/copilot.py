"""GitHub Copilot CLI: agentStop and subagentStop (its CLI hooks reference).

Input (camelCase, the event names greenloop installs): ``sessionId``, ``cwd``, ``timestamp``,
``transcriptPath``, ``stopReason``; the VS Code-compatible PascalCase names send snake_case keys
(``session_id``), read too. No flag says a stop follows a blocked one: greenloop's own count is the
bound. Its Claude-format entries (``.claude/settings.json``: ``Stop`` with ``session_id``, an ISO
``timestamp``, ``stop_reason``, ``stop_hook_active``) are answered here too: Copilot drops Claude
Code's ``additionalContext``. Reply: ``{"decision": "block", "reason": …}`` enqueues ``reason`` as
the next prompt. The
reply has no field for the user: a message goes to stderr, exit 0 (logged, never blocking).
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
    session = text(data.get("sessionId")) or text(data.get("session_id")) or "no-session"
    event = text(data.get("hook_event_name")) or text(data.get("hookEventName")) or "agentStop"
    return StopEvent(
        host="copilot",
        event=event,
        session_id=session,
        cwd=cwd_of(data.get("cwd"), default_cwd),
        stop_hook_active=data.get("stop_hook_active") is True,
        stamp=_seconds(data.get("timestamp")),
    )


def _seconds(stamp: object) -> float:
    """Its own events: epoch milliseconds; its Claude-format ones: an ISO 8601 string."""
    if isinstance(stamp, int | float) and not isinstance(stamp, bool):
        return stamp / 1000
    return iso_seconds(stamp)


def render(reply: HookReply, event: StopEvent) -> tuple[str, str]:
    if reply.block_reason:
        return json_line({"decision": "block", "reason": reply.block_reason}), ""
    if reply.system_message:
        return ("", clip(reply.system_message) + "\n")
    return "", ""

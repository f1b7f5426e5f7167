"""Gemini CLI: AfterAgent (its hook system, checked in the 0.61.0 bundle).

Input: ``session_id``, ``cwd``, ``hook_event_name: "AfterAgent"``, ``prompt``,
``prompt_response``, ``stop_hook_active``; ``GEMINI_PROJECT_DIR`` in the environment. Reply:
``{"decision": "deny", "reason": …}`` sends ``reason`` back as the next request (a retry turn);
``systemMessage`` is shown to the user. Exit 0 always: exit 2 is Gemini's blocking error.
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
    return StopEvent(
        host="gemini",
        event=text(data.get("hook_event_name")) or "AfterAgent",
        session_id=text(data.get("session_id")) or "no-session",
        cwd=cwd_of(data.get("cwd"), default_cwd),
        stop_hook_active=data.get("stop_hook_active") is True,
    )


def render(reply: HookReply, event: StopEvent) -> tuple[str, str]:
    if reply.block_reason:
        return json_line({"decision": "deny", "reason": reply.block_reason}), ""
    if reply.system_message:
        return json_line({"systemMessage": clip(reply.system_message)}), ""
    return "", ""

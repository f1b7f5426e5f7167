"""Kimi Code CLI: the ``Stop`` hook (its hooks reference, and kimi-cli's hook runner; Kimi does not
install here: by contract).

Input: ``hook_event_name: "Stop"``, ``session_id``, ``cwd``, ``stop_hook_active`` (always
``false``: Kimi re-runs a turn at most once per user prompt and calls no Stop hook after it) — the
shape of Claude Code's payload, so it is named by ``--host kimi``. Reply: Kimi's runner reads only
``hookSpecificOutput.permissionDecision: "deny"`` with ``permissionDecisionReason`` (or exit 2 with
stderr, which greenloop never uses): the reason becomes the next user message. A message for the
user goes to stderr, exit 0 (Kimi fails open on it).
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
        host="kimi",
        event=text(data.get("hook_event_name")) or "Stop",
        session_id=text(data.get("session_id")) or "no-session",
        cwd=cwd_of(data.get("cwd"), default_cwd),
        stop_hook_active=data.get("stop_hook_active") is True,
    )


def render(reply: HookReply, event: StopEvent) -> tuple[str, str]:
    if reply.block_reason:
        specific = {
            "hookEventName": event.event,
            "permissionDecision": "deny",
            "permissionDecisionReason": reply.block_reason,
        }
        return json_line({"hookSpecificOutput": specific}), ""
    if reply.system_message:
        return "", clip(reply.system_message) + "\n"
    return "", ""

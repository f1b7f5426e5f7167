"""Cursor: the ``stop`` hook (its hooks documentation; Cursor does not run here: by contract).

Input: ``conversation_id``, ``generation_id``, ``hook_event_name: "stop"``, ``status``
(``completed``, ``aborted``, ``error``), ``loop_count`` (follow-ups already sent in this loop),
``workspace_roots``. Reply: ``{"followup_message": …}`` is submitted as the next user message;
Cursor stops following up after ``loop_limit`` of them (installed as the project's ``max_iters``).
The reply has no field for the user: a message goes to stderr, exit 0.
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
    roots = data.get("workspace_roots")
    root = roots[0] if isinstance(roots, list) and roots else data.get("cwd")
    status = text(data.get("status")) or "completed"
    loops = data.get("loop_count")
    return StopEvent(
        host="cursor",
        event=text(data.get("hook_event_name")) or "stop",
        session_id=text(data.get("conversation_id")) or "no-session",
        cwd=cwd_of(root, default_cwd),
        stop_hook_active=isinstance(loops, int) and not isinstance(loops, bool) and loops > 0,
        defer="" if status == "completed" else f"the agent's loop ended {status}: not verified",
    )


def render(reply: HookReply, event: StopEvent) -> tuple[str, str]:
    if reply.block_reason:
        return json_line({"followup_message": reply.block_reason}), ""
    if reply.system_message:
        return ("{}\n", clip(reply.system_message) + "\n")
    return "", ""

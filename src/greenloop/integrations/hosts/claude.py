"""Claude Code: Stop, SubagentStop and TaskCompleted (the hooks reference, checked on 2.1.332).

Input: ``session_id``, ``cwd``, ``hook_event_name``, ``stop_hook_active``; SubagentStop adds
``agent_id``, TaskCompleted ``task_id``; Stop and SubagentStop carry ``background_tasks``, the work
still in flight that will wake the session again. Reply: ``{"decision": "block", "reason": …}``
keeps the agent going; on Stop the digest rides in ``hookSpecificOutput.additionalContext``
(feedback for the model, not an error: Claude Code repeats ``reason`` twice, the context once) and
``reason`` says why. ``systemMessage`` is for the user only. Exit 0 always: exit 2 would block with stderr.
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

# Stop's hookSpecificOutput takes additionalContext in 2.1.197's schema and 2.1.332's; SubagentStop's
# only in the later one (both binaries read): there the digest goes in reason, which every version reads
CONTEXT_EVENTS = ("Stop",)
IN_FLIGHT = ("running", "pending")
BLOCK_REASON = (
    "greenloop: the verifier fails; its digest is in the context above. Fix it, then stop."
)

TYPE_CHECKING = False  # not typing's: the Stop hook imports this on every agent turn
if TYPE_CHECKING:
    from typing import Any


def parse(data: Mapping[str, Any], default_cwd: Path) -> StopEvent:
    event = text(data.get("hook_event_name")) or "Stop"
    return StopEvent(
        host="claude",
        event=event,
        session_id=_session(data, event),
        cwd=cwd_of(data.get("cwd"), default_cwd),
        stop_hook_active=data.get("stop_hook_active") is True,
        defer=_in_flight(data.get("background_tasks")),
    )


def _session(data: Mapping[str, Any], event: str) -> str:
    session = text(data.get("session_id")) or "no-session"
    part = text(data.get("agent_id") if event == "SubagentStop" else data.get("task_id"))
    return f"{session}-{part}" if part and event != "Stop" else session


def _in_flight(tasks: object) -> str:
    if not isinstance(tasks, list):
        return ""
    running = [t for t in tasks if isinstance(t, dict) and t.get("status") in IN_FLIGHT]
    if not running:
        return ""
    kinds = ", ".join(sorted({text(t.get("type")) or "task" for t in running}))
    return (
        f"{len(running)} background task(s) still running ({kinds}): the tree is verified at "
        "the stop after they finish"
    )


def render(reply: HookReply, event: StopEvent) -> tuple[str, str]:
    if reply.block_reason and event.event in CONTEXT_EVENTS:
        reply_json = json_line(
            {
                "decision": "block",
                "reason": BLOCK_REASON,
                "hookSpecificOutput": {
                    "hookEventName": event.event,
                    "additionalContext": reply.block_reason,
                },
            }
        )
        return reply_json, ""
    if reply.block_reason:
        return json_line({"decision": "block", "reason": reply.block_reason}), ""
    if reply.system_message:
        return json_line({"systemMessage": clip(reply.system_message)}), ""
    return "", ""

"""OpenHands SDK: the ``Stop`` hook (``openhands.sdk.hooks``, read in openhands-sdk 1.58.2 and
driven for real).

Input: the SDK's ``HookEvent`` as JSON: ``event_type: "Stop"``, ``session_id`` (the conversation's
id), ``working_dir``, ``metadata.reason`` (``agent_finished``), and null tool fields; the hook runs
in the working directory with ``OPENHANDS_PROJECT_DIR`` set. Reply: exit 0 with
``{"decision": "deny", "reason": …}`` sets the conversation running again with ``reason`` as a
user message (``additionalContext`` would take its place: not sent). Anything else allows the
stop; a message for the user goes to stderr. The SDK puts no cap of its own on continuations
(only ``max_iteration_per_run``, 500 steps): greenloop's bound is the bound.
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
        host="openhands",
        event=text(data.get("event_type")) or "Stop",
        session_id=text(data.get("session_id")) or "no-session",
        cwd=cwd_of(data.get("working_dir"), default_cwd),
    )


def render(reply: HookReply, event: StopEvent) -> tuple[str, str]:
    if reply.block_reason:
        return json_line({"decision": "deny", "reason": reply.block_reason}), ""
    if reply.system_message:
        return "", clip(reply.system_message) + "\n"
    return "", ""

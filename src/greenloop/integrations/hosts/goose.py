"""Goose: the ``Stop`` hook of its plugins (its hooks guide, the Open Plugins hooks specification;
Goose does not install here: by contract).

Input: ``event: "Stop"``, ``session_id``, ``last_assistant_message``; no working directory (the
hook runs in the session's), so ``cwd`` or ``working_dir`` are read when present and the hook's
own directory otherwise. Reply: ``{"decision": "block", "reason": …}`` on stdout keeps the turn
going with ``reason``; empty stdout with exit 0 allows. Anything else on stdout reads as "no
decision", so a message for the user goes to stderr. Goose caps consecutive blocks itself
(``GOOSE_STOP_HOOK_BLOCK_CAP``); greenloop's bound is the tighter one by default.
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
        host="goose",
        event=text(data.get("event")) or "Stop",
        session_id=text(data.get("session_id")) or "no-session",
        cwd=cwd_of(data.get("cwd") or data.get("working_dir"), default_cwd),
    )


def render(reply: HookReply, event: StopEvent) -> tuple[str, str]:
    if reply.block_reason:
        return json_line({"decision": "block", "reason": reply.block_reason}), ""
    if reply.system_message:
        return "", clip(reply.system_message) + "\n"
    return "", ""

"""What the scripted model says: one :class:`Reply` per model call, and the HTTP :class:`Response`.

Shared by the wire formats (``wire_*.py``) and the :class:`~greenloop.demo.server.ReplayServer`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Api = Literal["chat", "messages", "responses", "gemini"]
Json = dict[str, Any]
SidePredicate = Callable[[Mapping[str, Any]], bool]

DEFAULT_MODEL = "replay-model"
SIDE_TEXT = "ok"
FINAL_TEXT = "done"


@dataclass(frozen=True)
class ToolCall:
    """One function/tool call the scripted model makes."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    id: str = ""


@dataclass(frozen=True)
class Reply:
    """One scripted model turn: text, tool calls, or an HTTP error."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    status: int = 200
    body: str = ""
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def say(cls, text: str) -> Reply:
        """A plain assistant message (ends the agent's turn)."""
        return cls(text=text)

    @classmethod
    def call(cls, name: str, text: str = "", /, **arguments: Any) -> Reply:
        """A single tool call ``name(**arguments)``, optionally after ``text``."""
        return cls(text=text, tool_calls=(ToolCall(name, arguments),))

    @classmethod
    def calls(cls, *calls: ToolCall, text: str = "") -> Reply:
        """Several tool calls in one turn."""
        return cls(text=text, tool_calls=tuple(calls))

    @classmethod
    def error(cls, status: int, body: str = "", retry_after_ms: int | None = 10) -> Reply:
        """An HTTP error (e.g. 429/500/529) to exercise client retries."""
        headers: tuple[tuple[str, str], ...] = ()
        if retry_after_ms is not None:
            headers = (("retry-after-ms", str(retry_after_ms)), ("retry-after", "0"))
        text = body or json.dumps(_error_json(status))
        return cls(status=status, body=text, headers=headers)

    @property
    def is_error(self) -> bool:
        return self.status >= 400


@dataclass(frozen=True)
class Response:
    """A rendered HTTP response."""

    status: int
    body: bytes
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()


def _error_json(status: int) -> Json:
    kind = {429: "rate_limit_error", 529: "overloaded_error"}.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": f"replayed HTTP {status}"}}


def json_response(payload: Mapping[str, Any], status: int = 200) -> Response:
    return Response(status, json.dumps(payload).encode())


def sse(events: Sequence[tuple[str | None, Mapping[str, Any] | str]]) -> Response:
    parts: list[str] = []
    for name, data in events:
        text = data if isinstance(data, str) else json.dumps(data)
        prefix = f"event: {name}\n" if name else ""
        parts.append(f"{prefix}data: {text}\n\n")
    headers = (("Cache-Control", "no-cache"),)
    return Response(200, "".join(parts).encode(), "text/event-stream", headers)


def tokens(value: object) -> int:
    return max(1, len(json.dumps(value)) // 4)


def args_json(call: ToolCall) -> str:
    return json.dumps(dict(call.arguments))


def output_tokens(reply: Reply) -> int:
    return tokens([reply.text, [args_json(c) for c in reply.tool_calls]])

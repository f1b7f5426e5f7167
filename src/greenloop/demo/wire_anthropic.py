"""Anthropic Messages API wire format (``messages``, what Claude Code speaks)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from greenloop.demo.script import Json, Reply, Response, json_response, output_tokens, sse, tokens


def _messages_content(reply: Reply, ids: Sequence[str]) -> list[Json]:
    blocks: list[Json] = [{"type": "text", "text": reply.text}] if reply.text else []
    for call, ident in zip(reply.tool_calls, ids, strict=True):
        blocks.append(
            {"type": "tool_use", "id": ident, "name": call.name, "input": dict(call.arguments)}
        )
    return blocks


def _messages_json(
    request: Mapping[str, Any], reply: Reply, model: str, ids: Sequence[str]
) -> Json:
    return {
        "id": f"msg_{ids[0] if ids else 'replay'}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _messages_content(reply, ids),
        "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": tokens(request.get("messages", [])),
            "output_tokens": output_tokens(reply),
        },
    }


def _block_events(index: int, block: Mapping[str, Any]) -> Iterator[tuple[str, Json]]:
    if block["type"] == "text":
        start: Json = {"type": "text", "text": ""}
        delta: Json = {"type": "text_delta", "text": block["text"]}
    else:
        start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    yield (
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": start},
    )
    yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
    yield "content_block_stop", {"type": "content_block_stop", "index": index}


def _messages_events(message: Json) -> Iterator[tuple[str, Json]]:
    usage = message["usage"]
    head = dict(
        message,
        content=[],
        stop_reason=None,
        usage={"input_tokens": usage["input_tokens"], "output_tokens": 1},
    )
    yield "message_start", {"type": "message_start", "message": head}
    yield "ping", {"type": "ping"}
    for index, block in enumerate(message["content"]):
        yield from _block_events(index, block)
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": usage["output_tokens"]},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def render_messages(
    request: Mapping[str, Any], reply: Reply, model: str, ids: Sequence[str]
) -> Response:
    """Render ``reply`` as an Anthropic Messages API response."""
    message = _messages_json(request, reply, model, ids)
    if not request.get("stream"):
        return json_response(message)
    return sse(list(_messages_events(message)))

"""OpenAI wire formats: chat completions (``chat``) and the Responses API (``responses``, codex)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from greenloop.demo.script import (
    Json,
    Reply,
    Response,
    args_json,
    json_response,
    output_tokens,
    sse,
    tokens,
)


def _chat_tool_calls(reply: Reply, ids: Sequence[str]) -> list[Json]:
    return [
        {"id": i, "type": "function", "function": {"name": c.name, "arguments": args_json(c)}}
        for c, i in zip(reply.tool_calls, ids, strict=True)
    ]


def _chat_usage(request: Mapping[str, Any], reply: Reply) -> Json:
    prompt, completion = tokens(request.get("messages", [])), output_tokens(reply)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _chat_json(request: Mapping[str, Any], reply: Reply, model: str, ids: Sequence[str]) -> Json:
    message: Json = {"role": "assistant", "content": reply.text or None}
    if reply.tool_calls:
        message["tool_calls"] = _chat_tool_calls(reply, ids)
    return {
        "id": f"chatcmpl-{ids[0] if ids else 'x'}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.tool_calls else "stop",
            }
        ],
        "usage": _chat_usage(request, reply),
    }


def _chat_chunks(
    request: Mapping[str, Any], reply: Reply, model: str, ids: Sequence[str]
) -> list[Json]:
    base: Json = {
        "id": "chatcmpl-replay",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }
    deltas: list[Json] = [{"role": "assistant", "content": ""}]
    if reply.text:
        deltas.append({"content": reply.text})
    for index, tool_call in enumerate(_chat_tool_calls(reply, ids)):
        deltas.append({"tool_calls": [dict(tool_call, index=index)]})
    chunks = [dict(base, choices=[{"index": 0, "delta": d, "finish_reason": None}]) for d in deltas]
    finish = "tool_calls" if reply.tool_calls else "stop"
    chunks.append(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": finish}]))
    chunks.append(dict(base, choices=[], usage=_chat_usage(request, reply)))
    return chunks


def render_chat(
    request: Mapping[str, Any], reply: Reply, model: str, ids: Sequence[str]
) -> Response:
    """Render ``reply`` as an OpenAI chat-completions response."""
    if not request.get("stream"):
        return json_response(_chat_json(request, reply, model, ids))
    events: list[tuple[str | None, Mapping[str, Any] | str]] = [
        (None, chunk) for chunk in _chat_chunks(request, reply, model, ids)
    ]
    events.append((None, "[DONE]"))
    return sse(events)


def _responses_output(reply: Reply, ids: Sequence[str]) -> list[Json]:
    items: list[Json] = []
    if reply.text:
        items.append(
            {
                "type": "message",
                "id": "msg_replay",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        )
    for call, ident in zip(reply.tool_calls, ids, strict=True):
        items.append(
            {
                "type": "function_call",
                "id": f"fc_{ident}",
                "call_id": ident,
                "name": call.name,
                "arguments": args_json(call),
                "status": "completed",
            }
        )
    return items


def _responses_json(
    request: Mapping[str, Any], reply: Reply, model: str, ids: Sequence[str]
) -> Json:
    prompt, completion = tokens(request.get("input", [])), output_tokens(reply)
    return {
        "id": f"resp_{ids[0] if ids else 'replay'}",
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed",
        "model": model,
        "output": _responses_output(reply, ids),
        "usage": {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + completion,
        },
    }


def _responses_events(response: Json) -> Iterator[tuple[str, Json]]:
    head = dict(response, status="in_progress", output=[])
    yield "response.created", {"type": "response.created", "response": head}
    for index, item in enumerate(response["output"]):
        yield (
            "response.output_item.added",
            {"type": "response.output_item.added", "output_index": index, "item": item},
        )
        if item["type"] == "message":
            text = item["content"][0]["text"]
            yield (
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "item_id": item["id"],
                    "output_index": index,
                    "content_index": 0,
                    "delta": text,
                },
            )
        yield (
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": index, "item": item},
        )
    yield "response.completed", {"type": "response.completed", "response": response}


def render_responses(
    request: Mapping[str, Any], reply: Reply, model: str, ids: Sequence[str]
) -> Response:
    """Render ``reply`` as an OpenAI Responses API response."""
    response = _responses_json(request, reply, model, ids)
    if not request.get("stream"):
        return json_response(response)
    return sse(list(_responses_events(response)))

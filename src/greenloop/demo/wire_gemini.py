"""Google Generative Language API wire format (``gemini``, what gemini CLI speaks)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from greenloop.demo.script import Json, Reply, Response, json_response, output_tokens, sse, tokens


def _gemini_json(request: Mapping[str, Any], reply: Reply, model: str) -> Json:
    parts: list[Json] = [{"text": reply.text}] if reply.text else []
    parts += [
        {"functionCall": {"name": c.name, "args": dict(c.arguments)}} for c in reply.tool_calls
    ]
    prompt, completion = tokens(request.get("contents", [])), output_tokens(reply)
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": prompt,
            "candidatesTokenCount": completion,
            "totalTokenCount": prompt + completion,
        },
        "modelVersion": model,
    }


def render_gemini(
    request: Mapping[str, Any], reply: Reply, model: str, ids: Sequence[str]
) -> Response:
    """Render ``reply`` as a Gemini ``generateContent`` response (SSE when streaming)."""
    del ids  # Gemini function calls carry no ids
    response = _gemini_json(request, reply, model)
    if not request.get("stream"):
        return json_response(response)
    return sse([(None, response)])

"""Embedded replay model server for testing real agent CLIs offline.

A :class:`ReplayServer` listens on ``127.0.0.1`` (port 0, i.e. a free port) and
plays back a fixed *script* of :class:`Reply` objects, one per model call, in
one of four wire formats:

``"chat"``
    OpenAI chat completions: ``POST /v1/chat/completions`` (also without the
    ``/v1`` prefix), ``GET /v1/models``.  Non-streaming JSON, or SSE chunks
    ending in ``data: [DONE]`` when the request has ``"stream": true``.
``"messages"``
    Anthropic Messages API: ``POST /v1/messages`` (``?beta=true`` is ignored),
    streaming SSE events exactly as Anthropic sends them, or plain JSON;
    ``POST /v1/messages/count_tokens`` and ``GET /v1/models`` too.
``"responses"``
    OpenAI Responses API (what ``codex`` speaks): ``POST /v1/responses``,
    streaming ``response.*`` SSE events or plain JSON.
``"gemini"``
    Google Generative Language API (what ``gemini`` CLI speaks with
    ``GOOGLE_GEMINI_BASE_URL``): ``POST /v1beta/models/M:generateContent``
    (JSON) and ``...:streamGenerateContent?alt=sse`` (SSE), ``:countTokens``.

Any other path is answered ``200 {}`` (Claude Code and friends probe a few
start-up, telemetry and metrics endpoints on the base URL; none of them must
hang or fail).

Side-request rule
-----------------
Agents make model calls that are not part of the conversation under test:
Claude Code asks for a session title, does a one-token "quota" check, and
uses its small/fast model to classify bash commands; aider may summarise the
chat with its weak model.  Such a call gets a short generic text
(:data:`SIDE_TEXT`, or a minimal JSON object built from the requested schema
when the request asks for JSON output, as gemini's model router does) and
does **not** consume the script.  A request is a side
request when the ``is_side`` predicate given to the server says so; the
default predicate is:

* ``"messages"`` / ``"responses"`` / ``"gemini"``: the request carries no
  ``tools`` (the main agent loop always offers tools), **or** the server was given
  ``model=...`` explicitly and the request names a different model (for
  gemini the model is the one in the URL path);
* ``"chat"``: only the model-name test (aider sends no tools at all).

When the script is exhausted, every further main request is answered with
the plain final text ``"done"`` (``stop`` / ``end_turn``), so agents finish.

Every JSON body received on a model endpoint is appended to ``.requests``;
``.main_requests`` holds only the ones judged to be the main conversation,
and ``.hits`` lists ``"METHOD /path"`` of every HTTP request.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
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


def _json_response(payload: Mapping[str, Any], status: int = 200) -> Response:
    return Response(status, json.dumps(payload).encode())


def _sse(events: Sequence[tuple[str | None, Mapping[str, Any] | str]]) -> Response:
    parts: list[str] = []
    for name, data in events:
        text = data if isinstance(data, str) else json.dumps(data)
        prefix = f"event: {name}\n" if name else ""
        parts.append(f"{prefix}data: {text}\n\n")
    headers = (("Cache-Control", "no-cache"),)
    return Response(200, "".join(parts).encode(), "text/event-stream", headers)


def _tokens(value: object) -> int:
    return max(1, len(json.dumps(value)) // 4)


def _args_json(call: ToolCall) -> str:
    return json.dumps(dict(call.arguments))


def _output_tokens(reply: Reply) -> int:
    return _tokens([reply.text, [_args_json(c) for c in reply.tool_calls]])


# ----------------------------------------------------------------- chat ----


def _chat_tool_calls(reply: Reply, ids: Sequence[str]) -> list[Json]:
    return [
        {"id": i, "type": "function", "function": {"name": c.name, "arguments": _args_json(c)}}
        for c, i in zip(reply.tool_calls, ids, strict=True)
    ]


def _chat_usage(request: Mapping[str, Any], reply: Reply) -> Json:
    prompt, completion = _tokens(request.get("messages", [])), _output_tokens(reply)
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
        return _json_response(_chat_json(request, reply, model, ids))
    events: list[tuple[str | None, Mapping[str, Any] | str]] = [
        (None, chunk) for chunk in _chat_chunks(request, reply, model, ids)
    ]
    events.append((None, "[DONE]"))
    return _sse(events)


# ------------------------------------------------------------- messages ----


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
            "input_tokens": _tokens(request.get("messages", [])),
            "output_tokens": _output_tokens(reply),
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
        return _json_response(message)
    return _sse(list(_messages_events(message)))


# ------------------------------------------------------------ responses ----


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
                "arguments": _args_json(call),
                "status": "completed",
            }
        )
    return items


def _responses_json(
    request: Mapping[str, Any], reply: Reply, model: str, ids: Sequence[str]
) -> Json:
    prompt, completion = _tokens(request.get("input", [])), _output_tokens(reply)
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
        return _json_response(response)
    return _sse(list(_responses_events(response)))


# --------------------------------------------------------------- gemini ----


def _gemini_json(request: Mapping[str, Any], reply: Reply, model: str) -> Json:
    parts: list[Json] = [{"text": reply.text}] if reply.text else []
    parts += [
        {"functionCall": {"name": c.name, "args": dict(c.arguments)}} for c in reply.tool_calls
    ]
    prompt, completion = _tokens(request.get("contents", [])), _output_tokens(reply)
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
        return _json_response(response)
    return _sse([(None, response)])


# ---------------------------------------------------------------- server ----

Renderer = Callable[[Mapping[str, Any], Reply, str, Sequence[str]], Response]
RENDERERS: Mapping[str, Renderer] = {
    "chat": render_chat,
    "messages": render_messages,
    "responses": render_responses,
    "gemini": render_gemini,
}
MODEL_PATHS: Mapping[str, tuple[str, ...]] = {
    "chat": ("/v1/chat/completions", "/chat/completions"),
    "messages": ("/v1/messages", "/messages"),
    "responses": ("/v1/responses", "/responses"),
    "gemini": (),
}
GEMINI_METHODS = (":generateContent", ":streamGenerateContent")


def default_side_predicate(api: Api, model: str | None) -> SidePredicate:
    """Build the documented default side-request rule (see module docstring)."""

    def is_side(request: Mapping[str, Any]) -> bool:
        if model is not None and request.get("model") not in (None, model):
            return True
        return api != "chat" and not request.get("tools")

    return is_side


def schema_stub(schema: Mapping[str, Any]) -> Any:
    """A minimal value satisfying a (JSON / Gemini) schema's required fields."""
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        props: Mapping[str, Any] = schema.get("properties", {})
        return {k: schema_stub(props.get(k, {})) for k in schema.get("required", props)}
    stubs: dict[str, Any] = {"string": SIDE_TEXT, "integer": 1, "number": 1, "boolean": False}
    return stubs.get(kind, [])


def _requested_schema(request: Mapping[str, Any]) -> Mapping[str, Any] | None:
    config = request.get("generationConfig") or {}
    if config.get("responseMimeType") == "application/json":
        schema: Mapping[str, Any] = (
            config.get("responseJsonSchema") or config.get("responseSchema") or {}
        )
        return schema
    response_format = request.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        schema = response_format.get("json_schema", {}).get("schema", {})
        return schema
    return {} if response_format.get("type") == "json_object" else None


def _side_reply(request: Mapping[str, Any], text: str) -> Reply:
    """Generic answer to a side request; JSON-shaped when the request asks for JSON."""
    schema = _requested_schema(request)
    return Reply.say(text if schema is None else json.dumps(schema_stub(schema)))


def _models_listing(model: str) -> Json:
    entry = {
        "id": model,
        "object": "model",
        "type": "model",
        "created": 0,
        "created_at": "2025-01-01T00:00:00Z",
        "display_name": model,
        "owned_by": "replay",
    }
    return {
        "object": "list",
        "data": [entry],
        "has_more": False,
        "first_id": model,
        "last_id": model,
    }


class ReplayServer:
    """Scripted model server; use as a context manager."""

    def __init__(
        self,
        script: Sequence[Reply],
        api: Api = "chat",
        model: str | None = None,
        *,
        is_side: SidePredicate | None = None,
        side_text: str = SIDE_TEXT,
        final_text: str = FINAL_TEXT,
    ) -> None:
        if api not in RENDERERS:
            raise ValueError(f"unknown api {api!r}")
        self.api: Api = api
        self.model = model or DEFAULT_MODEL
        self.is_side = is_side or default_side_predicate(api, model)
        self.side_text = side_text
        self.final_text = final_text
        self.requests: list[Json] = []
        self.main_requests: list[Json] = []
        self.hits: list[str] = []
        self._script = list(script)
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # lifecycle -------------------------------------------------------------

    def start(self) -> ReplayServer:
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_class(self))
        httpd.daemon_threads = True
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, args=(0.05,), daemon=True, name="replay-server"
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> ReplayServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("ReplayServer is not running")
        return int(self._httpd.server_address[1])

    @property
    def root_url(self) -> str:
        """``http://127.0.0.1:PORT`` (what ANTHROPIC_BASE_URL wants)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1`` (what OpenAI-style clients want)."""
        return f"{self.root_url}/v1"

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._script)

    # dispatch --------------------------------------------------------------

    def handle(self, method: str, path: str, body: bytes) -> Response:
        """Answer one HTTP request (called from handler threads)."""
        route = path.split("?", 1)[0].rstrip("/") or "/"
        with self._lock:
            self.hits.append(f"{method} {route}")
        if method == "GET" and route in ("/v1/models", "/models"):
            return _json_response(_models_listing(self.model))
        if method == "POST" and route.endswith("/count_tokens"):
            return _json_response({"input_tokens": _tokens(_parse(body))})
        if method == "POST" and route.endswith(":countTokens"):
            return _json_response({"totalTokens": _tokens(_parse(body))})
        if method == "POST" and route in MODEL_PATHS[self.api]:
            return self._model_call(_parse(body))
        if method == "POST" and self.api == "gemini" and route.endswith(GEMINI_METHODS):
            model = route.rsplit("/", 1)[-1].split(":", 1)[0]
            stream = route.endswith(":streamGenerateContent")
            return self._model_call(_parse(body), stream=stream, model=model)
        return _json_response({})

    def _model_call(
        self, request: Json, stream: bool | None = None, model: str | None = None
    ) -> Response:
        side = self.is_side(request if model is None else dict(request, model=model))
        with self._lock:
            self.requests.append(request)
            if side:
                reply = _side_reply(request, self.side_text)
            else:
                self.main_requests.append(request)
                reply = self._script.pop(0) if self._script else Reply.say(self.final_text)
            prefix = "toolu_replay_" if self.api == "messages" else "call_"
            ids = [c.id or f"{prefix}{next(self._ids)}" for c in reply.tool_calls]
        if reply.is_error:
            return Response(reply.status, reply.body.encode(), headers=reply.headers)
        model = model or str(request.get("model") or self.model)
        shown = request if stream is None else dict(request, stream=stream)
        return RENDERERS[self.api](shown, reply, model, ids)


def _parse(body: bytes) -> Json:
    try:
        value = json.loads(body or b"{}")
    except ValueError:
        return {"_raw": body.decode("utf-8", "replace")}
    return value if isinstance(value, dict) else {"_value": value}


def _handler_class(server: ReplayServer) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        replay = server

    return Handler


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    replay: ReplayServer

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log."""

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            return self._read_chunked()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _read_chunked(self) -> bytes:
        data = b""
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                self.rfile.readline()
                return data
            data += self.rfile.read(size)
            self.rfile.readline()

    def _respond(self, method: str) -> None:
        body = self._read_body() if method in ("POST", "PUT", "PATCH") else b""
        response = self.replay.handle(method, self.path, body)
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(response.body)))
        for name, value in response.headers:
            self.send_header(name, value)
        self.end_headers()
        if method != "HEAD":
            self.wfile.write(response.body)

    def do_GET(self) -> None:
        self._respond("GET")

    def do_POST(self) -> None:
        self._respond("POST")

    def do_PUT(self) -> None:
        self._respond("PUT")

    def do_PATCH(self) -> None:
        self._respond("PATCH")

    def do_DELETE(self) -> None:
        self._respond("DELETE")

    def do_HEAD(self) -> None:
        self._respond("HEAD")

"""The scripted model server: the demo's model, and the one tests run real agent CLIs against offline.

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
from collections.abc import Callable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from greenloop.demo.script import (
    DEFAULT_MODEL,
    FINAL_TEXT,
    SIDE_TEXT,
    Api,
    Json,
    Reply,
    Response,
    SidePredicate,
    json_response,
    tokens,
)
from greenloop.demo.wire_anthropic import render_messages
from greenloop.demo.wire_gemini import render_gemini
from greenloop.demo.wire_openai import render_chat, render_responses

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
            return json_response(_models_listing(self.model))
        if method == "POST" and route.endswith("/count_tokens"):
            return json_response({"input_tokens": tokens(_parse(body))})
        if method == "POST" and route.endswith(":countTokens"):
            return json_response({"totalTokens": tokens(_parse(body))})
        if method == "POST" and route in MODEL_PATHS[self.api]:
            return self._model_call(_parse(body))
        if method == "POST" and self.api == "gemini" and route.endswith(GEMINI_METHODS):
            model = route.rsplit("/", 1)[-1].split(":", 1)[0]
            stream = route.endswith(":streamGenerateContent")
            return self._model_call(_parse(body), stream=stream, model=model)
        return json_response({})

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

"""The scripted model server (greenloop.demo.server): OpenAI SDK for chat/responses, urllib for the rest."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from greenloop.demo.script import Reply, ToolCall
from greenloop.demo.server import ReplayServer, schema_stub
from limits import hang

openai = pytest.importorskip("openai")

TOOLS = [{"name": "Read", "description": "read", "input_schema": {"type": "object"}}]
CHAT_TOOLS = [{"type": "function", "function": {"name": "edit", "parameters": {"type": "object"}}}]


def client(srv: ReplayServer, retries: int = 0) -> Any:
    return openai.OpenAI(base_url=srv.base_url, api_key="sk-dummy", max_retries=retries)


def post(url: str, body: dict[str, Any]) -> tuple[int, str, str]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=hang(60)) as response:
        return response.status, response.headers["content-type"], response.read().decode()


def sse_events(text: str) -> list[tuple[str | None, Any]]:
    events: list[tuple[str | None, Any]] = []
    for block in text.strip().split("\n\n"):
        name, data = None, ""
        for line in block.splitlines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data = line[6:]
        events.append((name, data if data == "[DONE]" else json.loads(data)))
    return events


def chat(srv: ReplayServer, **kwargs: Any) -> Any:
    messages = [{"role": "user", "content": "hi"}]
    return client(srv).chat.completions.create(model="m", messages=messages, **kwargs)


# ------------------------------------------------------------------ chat ----


def test_chat_text_non_streaming_with_usage() -> None:
    with ReplayServer([Reply.say("hello")], api="chat") as srv:
        result = chat(srv)
        assert srv.base_url.startswith("http://127.0.0.1:")
        assert srv.base_url.endswith("/v1")
    assert result.choices[0].message.content == "hello"
    assert result.choices[0].finish_reason == "stop"
    assert result.usage.total_tokens == result.usage.prompt_tokens + result.usage.completion_tokens
    assert srv.requests[0]["messages"] == [{"role": "user", "content": "hi"}]


def test_chat_tool_call_non_streaming() -> None:
    script = [Reply.call("edit", path="a.py", old="x", new="y")]
    with ReplayServer(script, api="chat") as srv:
        result = chat(srv, tools=CHAT_TOOLS)
    call = result.choices[0].message.tool_calls[0]
    assert result.choices[0].finish_reason == "tool_calls"
    assert call.function.name == "edit"
    assert json.loads(call.function.arguments) == {"path": "a.py", "old": "x", "new": "y"}
    assert call.id


def test_chat_streaming_text_and_tool_calls() -> None:
    reply = Reply.calls(ToolCall("a", {"n": 1}), ToolCall("b", {"n": 2}, id="fixed"), text="hm")
    with ReplayServer([reply], api="chat") as srv:
        stream = chat(srv, stream=True, stream_options={"include_usage": True})
        chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    calls = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []]
    finish = [c.choices[0].finish_reason for c in chunks if c.choices][-1]
    assert text == "hm"
    assert [(c.index, c.function.name, c.id) for c in calls] == [
        (0, "a", "call_1"),
        (1, "b", "fixed"),
    ]
    assert json.loads(calls[1].function.arguments) == {"n": 2}
    assert finish == "tool_calls"
    assert chunks[-1].usage.completion_tokens > 0


def test_chat_streaming_raw_sse_ends_with_done() -> None:
    with ReplayServer([Reply.say("x")], api="chat") as srv:
        _, ctype, body = post(f"{srv.root_url}/chat/completions", {"stream": True})
    assert ctype == "text/event-stream"
    assert sse_events(body)[-1] == (None, "[DONE]")


def test_chat_error_is_retried_by_sdk() -> None:
    script = [Reply.error(429), Reply.error(500), Reply.say("finally")]
    with ReplayServer(script, api="chat") as srv:
        result = client(srv, retries=3).chat.completions.create(model="m", messages=[])
    assert result.choices[0].message.content == "finally"
    assert len(srv.requests) == 3


@pytest.mark.parametrize(
    ("status", "error"), [(429, "RateLimitError"), (503, "InternalServerError")]
)
def test_chat_error_surfaces_without_retries(status: int, error: str) -> None:
    script = [Reply.error(status, '{"error": {"message": "boom"}}')]
    with ReplayServer(script, api="chat") as srv, pytest.raises(getattr(openai, error)) as info:
        chat(srv)
    assert info.value.status_code == status


def test_script_exhaustion_answers_done() -> None:
    with ReplayServer([Reply.say("one")], api="chat") as srv:
        assert chat(srv).choices[0].message.content == "one"
        assert chat(srv).choices[0].message.content == "done"
        assert chat(srv).choices[0].finish_reason == "stop"
        assert srv.remaining == 0


def test_models_listing_and_unknown_paths() -> None:
    with ReplayServer([], api="chat", model="replay-x") as srv:
        models = client(srv).models.list()
        assert [m.id for m in models.data] == ["replay-x"]
        assert post(f"{srv.root_url}/api/event_logging/batch", {"a": 1})[2] == "{}"
        assert "POST /api/event_logging/batch" in srv.hits


def test_chat_side_request_by_model_name() -> None:
    with ReplayServer([Reply.say("main")], api="chat", model="big") as srv:
        side = client(srv).chat.completions.create(model="weak", messages=[])
        main = client(srv).chat.completions.create(model="big", messages=[])
    assert side.choices[0].message.content == "ok"
    assert main.choices[0].message.content == "main"
    assert len(srv.requests) == 2
    assert len(srv.main_requests) == 1


def test_stop_is_idempotent() -> None:
    srv = ReplayServer([], api="chat").start()
    srv.stop()
    srv.stop()
    with pytest.raises(RuntimeError):
        _ = srv.base_url


# -------------------------------------------------------------- messages ----


def test_messages_non_streaming_tool_use() -> None:
    script = [Reply.call("Read", "looking", file_path="/x")]
    with ReplayServer(script, api="messages") as srv:
        status, _, body = post(f"{srv.root_url}/v1/messages?beta=true", {"tools": TOOLS})
    message = json.loads(body)
    assert status == 200
    assert message["type"] == "message"
    assert message["stop_reason"] == "tool_use"
    assert message["content"][0] == {"type": "text", "text": "looking"}
    tool = message["content"][1]
    assert (tool["type"], tool["name"], tool["input"]) == ("tool_use", "Read", {"file_path": "/x"})
    assert tool["id"].startswith("toolu_")
    assert message["usage"]["output_tokens"] > 0


def test_messages_streaming_event_sequence() -> None:
    script = [Reply.call("Edit", "ok", file_path="/a", old_string="x", new_string="y")]
    with ReplayServer(script, api="messages") as srv:
        _, ctype, body = post(f"{srv.root_url}/v1/messages", {"tools": TOOLS, "stream": True})
    events = sse_events(body)
    assert ctype == "text/event-stream"
    assert all(name == data["type"] for name, data in events)
    assert [name for name, _ in events] == [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert events[0][1]["message"]["content"] == []
    assert events[3][1]["delta"] == {"type": "text_delta", "text": "ok"}
    assert events[5][1]["content_block"]["input"] == {}
    delta = events[6][1]["delta"]
    assert delta["type"] == "input_json_delta"
    assert json.loads(delta["partial_json"])["new_string"] == "y"
    assert events[8][1]["delta"]["stop_reason"] == "tool_use"


def test_messages_side_requests_do_not_consume_script() -> None:
    with ReplayServer([Reply.say("main answer")], api="messages") as srv:
        title = json.loads(post(f"{srv.root_url}/v1/messages", {"max_tokens": 1})[2])
        main = json.loads(post(f"{srv.root_url}/v1/messages", {"tools": TOOLS})[2])
        after = json.loads(post(f"{srv.root_url}/v1/messages", {"tools": TOOLS})[2])
    assert title["content"] == [{"type": "text", "text": "ok"}]
    assert main["content"][0]["text"] == "main answer"
    assert (after["content"][0]["text"], after["stop_reason"]) == ("done", "end_turn")
    assert len(srv.requests) == 3
    assert len(srv.main_requests) == 2


def test_messages_count_tokens_and_error() -> None:
    with ReplayServer([Reply.error(529)], api="messages") as srv:
        _, _, body = post(f"{srv.root_url}/v1/messages/count_tokens", {"messages": []})
        assert json.loads(body)["input_tokens"] >= 1
        with pytest.raises(urllib.error.HTTPError) as info:
            post(f"{srv.root_url}/v1/messages", {"tools": TOOLS})
    assert info.value.code == 529
    assert info.value.headers["retry-after-ms"] == "10"
    assert json.loads(info.value.read())["error"]["type"] == "overloaded_error"


# ------------------------------------------------------- responses/gemini ----


def test_responses_api_via_sdk() -> None:
    script = [Reply.call("exec_command", cmd="ls"), Reply.say("bye")]
    tools = [{"type": "function", "name": "exec_command", "parameters": {"type": "object"}}]
    with ReplayServer(script, api="responses") as srv:
        first = client(srv).responses.create(model="m", input="hi", tools=tools)
        events = list(client(srv).responses.create(model="m", input="x", tools=tools, stream=True))
    call = first.output[0]
    assert (call.type, call.name, json.loads(call.arguments)) == (
        "function_call",
        "exec_command",
        {"cmd": "ls"},
    )
    assert events[0].type == "response.created"
    assert events[-1].type == "response.completed"
    assert events[-1].response.output_text == "bye"


def test_gemini_generate_and_stream() -> None:
    script = [Reply.call("replace", file_path="a"), Reply.say("fine")]
    body = {"contents": [], "tools": [{"functionDeclarations": []}]}
    router = {
        "contents": [],
        "generationConfig": {
            "responseMimeType": "application/json",
            "responseJsonSchema": {
                "type": "OBJECT",
                "properties": {"score": {"type": "INTEGER"}, "why": {"type": "STRING"}},
                "required": ["score", "why"],
            },
        },
    }
    with ReplayServer(script, api="gemini") as srv:
        base = f"{srv.root_url}/v1beta/models"
        side = json.loads(post(f"{base}/lite:generateContent", router)[2])
        first = json.loads(post(f"{base}/big:generateContent", body)[2])
        _, ctype, streamed = post(f"{base}/big:streamGenerateContent?alt=sse", body)
    side_text = side["candidates"][0]["content"]["parts"][0]["text"]
    assert json.loads(side_text) == {"score": 1, "why": "ok"}
    part = first["candidates"][0]["content"]["parts"][0]
    assert part == {"functionCall": {"name": "replace", "args": {"file_path": "a"}}}
    assert ctype == "text/event-stream"
    chunk = sse_events(streamed)[0][1]
    assert chunk["candidates"][0]["content"]["parts"] == [{"text": "fine"}]
    assert chunk["usageMetadata"]["totalTokenCount"] > 0
    assert len(srv.main_requests) == 2


def test_schema_stub() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "array"}, "b": {"type": "boolean"}, "c": {"type": "number"}},
    }
    assert schema_stub(schema) == {"a": [], "b": False, "c": 1}


def test_unknown_api_rejected() -> None:
    with pytest.raises(ValueError, match="unknown api"):
        ReplayServer([], api="soap")  # type: ignore[arg-type]

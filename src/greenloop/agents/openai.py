"""The built-in agent: any OpenAI-compatible chat-completions endpoint, editing through tools.

OpenAI, Ollama, vLLM, llama.cpp's server, LM Studio, OpenRouter and LiteLLM all speak this API.
The official ``openai`` SDK is imported only here, lazily (extra ``[llm]``); its own retries are
off (``max_retries=0``) so ours are deterministic: backoff on 429/5xx honouring Retry-After.
Endpoints that reject ``tools`` get the SEARCH/REPLACE text protocol of ``textedit``. The
conversation carries across iterations on the agent object, trimmed to a token budget.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from greenloop.agents.base import AgentOutcome, AgentRequest, Usage
from greenloop.agents.textedit import FORMAT_HELP, apply_block, done_summary, parse_blocks
from greenloop.agents.tools import (
    ToolError,
    ToolResult,
    call_tool,
    excerpt,
    list_files,
    mentioned_files,
    tool_specs,
)
from greenloop.errors import FatalError

CHARS_PER_TOKEN = 3  # the digest's estimate (issue 3): chars/4 under-counts code
SDK_MISSING = "the built-in agent needs the openai SDK: pip install 'greenloop[llm]'"
OFFERED_FILES = 3
OFFERED_LINES = 400
OUTPUT_CAP = 20_000
SHORT = 200
Message = dict[str, Any]

_ROLE = """You are the code-editing agent inside greenloop, a verify -> fix loop. You work in a git
repository; after your turn the project's checks (tests, type checks, linters) run and their
failures come back to you as the next message. Fix the root cause in the project's code. Do not
delete, skip or weaken tests or checks to make them pass. You cannot run commands."""
SYSTEM_TOOLS = f"""{_ROLE}
Look with read_file, list_files and search; edit with replace_in_file (exact text that matches
once) or write_file; the "   12| " line-number prefixes shown by read_file are not part of the
file. Paths are relative to the repository root. When the edit is done, call
finish with a one-line summary of the change; it becomes the commit message."""
SYSTEM_TEXT = f"{_ROLE}\n{FORMAT_HELP}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    model: str
    base_url: str | None = None
    api_key: str = "not-needed"
    tools: bool = True
    """False: use the SEARCH/REPLACE text protocol (also chosen when the endpoint rejects tools)."""
    max_tool_turns: int = 25
    """Tool calls (text mode: replies) per iteration before the iteration stops."""
    request_timeout_s: float = 120.0
    context_budget_tokens: int = 24_000
    """Upper bound for each request's messages + tool schemas, at chars/3 tokens."""
    max_retries: int = 4
    backoff_base_s: float = 1.0
    max_wait_s: float = 60.0
    """Total seconds of retry waiting per request before the error counts as persistent."""


class _ApiFailure(Exception):
    pass


class _ToolsRejected(Exception):
    pass


class _OutOfTime(Exception):
    pass


@dataclass(slots=True)
class _Iteration:
    """What one ``run`` call did so far (mutable accumulator)."""

    deadline: float
    tool_calls: int = 0
    usage: Usage = field(default_factory=Usage)
    log: list[str] = field(default_factory=list)
    edited: list[str] = field(default_factory=list)
    summary: str = ""
    finished: bool = False
    last_text: str = ""
    limit_hit: bool = False

    def record(self, what: str, result: ToolResult) -> None:
        self.log.append(f"{what} -> {result.text.splitlines()[0] if result.text else ''}")
        if result.edited and result.edited not in self.edited:
            self.edited.append(result.edited)
        if result.finished is not None:
            self.summary, self.finished = result.finished, True


def _import_openai() -> Any:
    try:
        import openai
    except ImportError:
        raise FatalError(SDK_MISSING) from None
    return openai


class OpenAIAgent:
    """The built-in agent; keeps its conversation between iterations."""

    def __init__(
        self,
        settings: Settings,
        *,
        sleep: Callable[[float], None] = time.sleep,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self._openai = _import_openai()
        self._client = self._openai.OpenAI(
            base_url=settings.base_url,
            api_key=settings.api_key,
            timeout=settings.request_timeout_s,
            max_retries=0,
        )
        self._sleep, self._now = sleep, now
        self._tools = settings.tools
        self.messages: list[Message] = []

    @classmethod
    def from_spec(
        cls,
        spec: str,
        *,
        base_url: str | None = None,
        environ: Mapping[str, str] = os.environ,
        sleep: Callable[[float], None] = time.sleep,
        **options: Any,
    ) -> OpenAIAgent:
        """``openai:MODEL``; ``base_url`` or ``$OPENAI_BASE_URL``; key from ``$OPENAI_API_KEY``."""
        kind, _, model = spec.partition(":")
        if kind != "openai" or not model:
            raise FatalError(f"bad agent {spec!r}: expected openai:MODEL, e.g. openai:gpt-4o-mini")
        url = base_url or environ.get("OPENAI_BASE_URL") or None
        key = environ.get("OPENAI_API_KEY", "")
        if not key and url is None:
            raise FatalError(
                "OPENAI_API_KEY is not set; export it, or give --base-url for a local server"
            )
        settings = Settings(model=model, base_url=url, api_key=key or "not-needed", **options)
        return cls(settings, sleep=sleep)

    @property
    def name(self) -> str:
        return f"openai:{self.settings.model}"

    @property
    def continues(self) -> bool:
        return True  # self.messages holds the conversation across iterations

    @property
    def reports_usage(self) -> str:
        """The API's token counts always; a cost only where the endpoint sends one."""
        return "tokens"

    def describe(self) -> str:
        where = self.settings.base_url or "api.openai.com"
        mode = "tool calls" if self._tools else "SEARCH/REPLACE text edits"
        return (
            f"built-in agent: {self.settings.model} at {where} ({mode}, "
            f"at most {self.settings.max_tool_turns} per iteration)"
        )

    def run(self, request: AgentRequest) -> AgentOutcome:
        start = self._now()
        it = _Iteration(deadline=start + request.timeout_s)
        self._add_prompt(request)
        error, timed_out = "", False
        try:
            self._converse(request.repo, it)
        except _ApiFailure as exc:
            error = f"model API error: {exc}"
        except _OutOfTime:
            error, timed_out = f"no answer within the agent timeout ({request.timeout_s:g}s)", True
        if not error and it.limit_hit and not it.edited:
            error = (
                f"stopped at the tool-call limit ({self.settings.max_tool_turns}) without an edit"
            )
        return self._outcome(it, error, timed_out, self._now() - start)

    # conversation ------------------------------------------------------------

    def _add_prompt(self, request: AgentRequest) -> None:
        if not self.messages:
            self.messages.append({"role": "system", "content": self._system()})
        first = len(self.messages) == 1
        offer = first or not self._tools  # text mode cannot read files: offer them every time
        context = self._context(request.repo, request.prompt, first=first) if offer else ""
        content = f"{context}\n\n{request.prompt}" if context else request.prompt
        self.messages.append({"role": "user", "content": content})

    def _system(self) -> str:
        return SYSTEM_TOOLS if self._tools else SYSTEM_TEXT

    def _context(self, repo: Path, prompt: str, *, first: bool) -> str:
        room = self.settings.context_budget_tokens * CHARS_PER_TOKEN // 2
        parts = [f"Repository files:\n{list_files(repo)}"] if first else []
        for rel, line in mentioned_files(repo, prompt, OFFERED_FILES):
            text = f"{rel} (named in the failures):\n{excerpt(repo, rel, line, OFFERED_LINES)}"
            if sum(map(len, parts)) + len(text) < room:
                parts.append(text)
        return "\n\n".join(parts)

    def _converse(self, repo: Path, it: _Iteration) -> None:
        if self._tools:
            try:
                self._converse_tools(repo, it)
                return
            except _ToolsRejected:
                self._switch_to_text(it)
        self._converse_text(repo, it)

    def _converse_tools(self, repo: Path, it: _Iteration) -> None:
        while True:
            message = self._complete(it)
            calls = message.get("tool_calls") or []
            if not calls:
                return
            for call in calls:
                answer = self._answer(repo, call, it)
                self.messages.append(
                    {"role": "tool", "tool_call_id": call["id"], "content": answer}
                )
            if it.limit_hit or it.finished:
                return

    def _answer(self, repo: Path, call: Message, it: _Iteration) -> str:
        name, raw = call["function"]["name"], call["function"]["arguments"]
        if it.tool_calls >= self.settings.max_tool_turns:
            it.limit_hit = True
            return f"error: tool-call limit ({self.settings.max_tool_turns}) reached; stopping"
        it.tool_calls += 1
        result = call_tool(repo, name, raw, deadline=it.deadline)
        it.record(f"{name}({raw[:120]})", result)
        return result.text

    def _converse_text(self, repo: Path, it: _Iteration) -> None:
        for _ in range(self.settings.max_tool_turns):
            text = str(self._complete(it).get("content") or "")
            it.summary = done_summary(text) or it.summary
            try:
                results = [apply_block(repo, block) for block in parse_blocks(text)]
            except ToolError as exc:
                results = [ToolResult(text=f"error: {exc}", ok=False)]
            for result in results:
                it.record("edit block", result)
            failed = [r.text for r in results if not r.ok]
            if not failed:
                return
            feedback = "These SEARCH/REPLACE blocks failed (any others were applied):\n"
            self.messages.append({"role": "user", "content": feedback + "\n".join(failed)})
        it.limit_hit = True

    def _switch_to_text(self, it: _Iteration) -> None:
        """The endpoint refused ``tools``: continue with SEARCH/REPLACE blocks."""
        self._tools = False
        it.log.append("endpoint rejected tool calling; using SEARCH/REPLACE text edits")
        self.messages = [_without_tools(m) for m in self.messages]
        self.messages[0] = {"role": "system", "content": SYSTEM_TEXT}

    # requests ----------------------------------------------------------------

    def _complete(self, it: _Iteration) -> Message:
        """One model reply, appended to the conversation."""
        tools = tool_specs() if self._tools else None
        overhead = len(json.dumps(tools)) if tools else 0
        room = self.settings.context_budget_tokens * CHARS_PER_TOKEN - overhead
        self.messages = trim_messages(self.messages, room)
        response = self._create(it, {"tools": tools} if tools else {})
        it.usage = _add_usage(it.usage, response.usage)
        if not response.choices:
            raise _ApiFailure("the endpoint returned no choices")
        message = _as_message(response.choices[0].message)
        text = str(message.get("content") or "")
        if text.strip():  # the narration, in order: before the tool calls it announces
            it.log.append(text.strip())
        it.last_text = text or it.last_text
        self.messages.append(message)
        return message

    def _create(self, it: _Iteration, extra: Mapping[str, Any]) -> Any:
        waited, attempt = 0.0, 0
        while True:
            remaining = it.deadline - self._now()
            if remaining <= 0:
                raise _OutOfTime
            it.usage = replace(it.usage, requests=it.usage.requests + 1)
            try:
                return self._client.chat.completions.create(
                    model=self.settings.model,
                    messages=self.messages,
                    timeout=min(self.settings.request_timeout_s, remaining),
                    **extra,
                )
            except self._openai.APIStatusError as exc:
                if exc.status_code == 400 and extra and self._may_lack_tools(exc):
                    raise _ToolsRejected from None
                failure = f"HTTP {exc.status_code}: {_detail(exc)}"
                if exc.status_code != 429 and exc.status_code < 500:
                    raise _ApiFailure(failure) from None
                delay = _retry_after(exc.response.headers)
            except self._openai.APIConnectionError as exc:
                failure, delay = f"{type(exc).__name__}: {exc}", None
            delay = self.settings.backoff_base_s * 2**attempt if delay is None else delay
            attempt += 1
            if attempt > self.settings.max_retries or waited + delay > self.settings.max_wait_s:
                raise _ApiFailure(f"{failure} (gave up after {attempt} attempts)")
            it.log.append(f"retrying in {delay:.2f}s after {failure}")
            self._sleep(delay)
            waited += delay
            it.usage = replace(it.usage, retry_wait_s=it.usage.retry_wait_s + delay)

    def _may_lack_tools(self, exc: Any) -> bool:
        """A 400 naming tools before any tool call succeeded: the endpoint lacks tool support."""
        answered = any(m["role"] == "tool" for m in self.messages)
        return not answered and "tool" in _detail(exc).lower()

    def _outcome(self, it: _Iteration, error: str, timed_out: bool, took: float) -> AgentOutcome:
        if it.limit_hit:
            it.log.append(f"stopped at the tool-call limit ({self.settings.max_tool_turns})")
        first_line = it.last_text.strip().splitlines()[0] if it.last_text.strip() else ""
        summary = (it.summary or first_line)[:120]
        return AgentOutcome(
            ok=not error,
            timed_out=timed_out,
            duration_s=took,
            output="\n".join(it.log)[-OUTPUT_CAP:],
            summary=summary,
            error=error,
            usage=it.usage,
        )


def _detail(exc: Any) -> str:
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])
    return str(exc.message)


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (numeric form only)."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        try:
            return max(0.0, float(headers.get(name, "")) / scale)
        except ValueError:
            continue
    return None


def _add_usage(total: Usage, usage: Any) -> Usage:
    if usage is None:
        return total
    cost = getattr(usage, "cost", None)
    if isinstance(cost, int | float):
        cost = (total.cost_usd or 0.0) + float(cost)
    return replace(
        total,
        prompt_tokens=total.prompt_tokens + (usage.prompt_tokens or 0),
        completion_tokens=total.completion_tokens + (usage.completion_tokens or 0),
        cost_usd=cost if isinstance(cost, float) else total.cost_usd,
    )


def _without_tools(message: Message) -> Message:
    """A message an endpoint without tool support accepts."""
    if message["role"] == "tool":
        return {"role": "user", "content": f"Tool result: {message['content']}"}
    if "tool_calls" in message:
        calls = "; ".join(f"{c['function']['name']}(...)" for c in message["tool_calls"])
        return {"role": "assistant", "content": f"{message['content']}\n[called {calls}]".strip()}
    return message


def _as_message(message: Any) -> Message:
    """The SDK's reply as a plain dict to send back; tool-call ids filled in when missing."""
    out: Message = {"role": "assistant", "content": message.content or ""}
    calls = [
        {
            "id": call.id or f"call_{index}",
            "type": "function",
            "function": {"name": call.function.name, "arguments": call.function.arguments or ""},
        }
        for index, call in enumerate(message.tool_calls or [])
        if getattr(call, "function", None) is not None  # only function tools are offered
    ]
    if calls:
        out["tool_calls"] = calls
    return out


# context budget --------------------------------------------------------------


def estimate_tokens(messages: list[Message]) -> int:
    return math.ceil(_size(messages) / CHARS_PER_TOKEN)


def _size(messages: list[Message]) -> int:
    return len(json.dumps(messages))


def _shortened(message: Message) -> Message:
    content = str(message.get("content") or "")
    if message["role"] == "tool" and len(content) > SHORT:
        message = {**message, "content": f"[trimmed: {len(content)} chars of old tool output]"}
    elif len(content) > SHORT:
        message = {**message, "content": content[: SHORT // 2] + " … [trimmed]"}
    if "tool_calls" in message:
        calls = [
            {**c, "function": {**c["function"], "arguments": _short_args(c["function"])}}
            for c in message["tool_calls"]
        ]
        message = {**message, "tool_calls": calls}
    return message


def _short_args(function: Mapping[str, str]) -> str:
    try:
        args = json.loads(function["arguments"] or "{}")
    except ValueError:
        return "{}"
    if not isinstance(args, dict):
        return "{}"
    short = {
        k: f"[trimmed {len(v)} chars]" if isinstance(v, str) and len(v) > SHORT else v
        for k, v in args.items()
    }
    return json.dumps(short)


def _unit_end(messages: list[Message], start: int) -> int:
    """End of the exchange at ``start``: an assistant message with its tool results."""
    end = start + 1
    while end < len(messages) and messages[end]["role"] == "tool":
        end += 1
    return end


def trim_messages(messages: list[Message], max_chars: int) -> list[Message]:
    """Fit the conversation into ``max_chars`` (JSON): shorten the oldest tool output first,
    then drop the oldest exchanges; the system message and latest user prompt always stay."""
    msgs = list(messages)
    if _size(msgs) <= max_chars:
        return msgs
    last_user = max(i for i, m in enumerate(msgs) if m["role"] == "user")
    old = [i for i in range(1, len(msgs) - 1) if i != last_user]
    for index in sorted(old, key=lambda i: (msgs[i]["role"] != "tool", i)):
        msgs[index] = _shortened(msgs[index])
        if _size(msgs) <= max_chars:
            return msgs
    while last_user > 1 and _size(msgs) > max_chars:
        end = _unit_end(msgs, 1)
        del msgs[1:end]
        last_user -= end - 1
    for index in (len(msgs) - 1, last_user):  # last resort: cut the newest texts themselves
        excess = _size(msgs) - max_chars
        content = str(msgs[index].get("content") or "")
        if excess > 0 and content:
            keep = max(0, len(content) - excess - 40)
            msgs[index] = {**msgs[index], "content": content[:keep] + " … [cut to fit budget]"}
    return msgs

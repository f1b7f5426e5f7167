"""Each host's shell-tool hook payload -> a :class:`ToolCall`; a replacement text -> its reply.

Claude Code (2.1.121+; read from 2.1.197's own schema): ``PostToolUse`` carries ``tool_response``
``{stdout, stderr, interrupted, isImage, noOutputExpected}`` for a command that exited 0 and
takes ``hookSpecificOutput.updatedToolOutput``, which must keep that shape (else Claude Code
drops it and logs "does not match Bash's output shape"). A command that exits non-zero fires
``PostToolUseFailure`` instead, with ``error: "Exit code N\\n<output>"``, and that event takes
``additionalContext`` only: the raw output cannot be replaced there, and 2.1.332 hands it the
first and last 5,000 characters only. So on ``PreToolUse`` the hook
wraps a verifier's command (``updatedInput``) to end with a line holding its exit code and exit 0:
its output then reaches ``PostToolUse``, which reads the code back and replaces the output. A
command that leaves the shell itself (``pytest || exit 1``) still fails as before, and its output
is given the digest as ``additionalContext``. Claude Code checks permissions on the wrapped command:
a prefix rule (``Bash(pytest:*)``) does not match it, so the PreToolUse entry is the user's choice.

OpenCode (opencode-ai 1.18.33, driven for real): no hook command of its own; the plugin
``greenloop install opencode`` writes calls this hook from ``tool.execute.after`` on ``bash`` with
``tool_name``, ``tool_input`` (the tool's args), ``cwd`` and ``tool_response: {output, exit,
truncated}``, and puts the reply's ``output`` in place of what the model reads.

Codex CLI (0.171.0, recorded from the real CLI): ``PostToolUse`` on ``Bash`` (its ``exec_command``)
carries ``turn_id`` and ``tool_response``, the output string itself, with no exit code; past about
10,000 characters Codex's own head and tail under ``Warning: truncated output (original token
count: N)``. ``{"decision": "block", "reason": R}`` makes R the tool output the model reads.

Gemini CLI (0.61.0): ``AfterTool`` carries ``tool_response.llmContent`` (``Output: …`` then
``Exit Code: N`` and ``Process Group PGID: …`` lines, wrapped in ``<untrusted_context>``);
``decision: "deny"`` with ``reason`` replaces what the model reads (0.61.0 does not yet read the
documented ``hookSpecificOutput.tool_output``; it is sent too, for the versions that do).

GitHub Copilot CLI (1.0.102): ``postToolUse`` carries ``toolName: "bash"``, ``toolArgs`` and
``toolResult: {resultType, textResultForLlm}``, for a command that exits non-zero too (the
tool itself succeeded); the text ends with ``<shellId: N completed with exit code M>`` (a command
still running after ``initial_wait`` says so instead), and a long output (29 KB was) is saved to a
file the text names (``Saved to: …``), in place of all but a 500-character preview. ``modifiedResult.textResultForLlm`` replaces what the model reads. Its Claude-format
events (``.claude/settings.json``, or ``PostToolUse`` in its own hooks folder) send the same in
snake_case (``tool_result.text_result_for_llm``) and take the same reply.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from greenloop.integrations.hosts import cwd_of
from greenloop.integrations.tool_gate import SHELL_TOOLS, tool_of

HOSTS = ("claude", "codex", "gemini", "copilot", "opencode")
CLAUDE_ERROR_CAP = 10_000
"""Claude Code hands ``PostToolUseFailure`` about 10,000 characters of a failing command's
``Exit code N`` text and output (2.1.332: its first and last 5,000 around ``... [N characters
truncated] ...``); a text that long was cut."""
_CLAUDE_MIDDLE = re.compile(r"\n\n\.\.\. \[(\d+) characters truncated\] \.\.\.\n\n")
PERSISTED_CAP = 16 * 1024 * 1024
"""Characters read at most from the file the host saved a long output in."""
_EXIT_LINE = re.compile(r"^Exit code (-?\d+)\n", re.IGNORECASE)
_GEMINI_TAIL = re.compile(r"^(?:Error|Exit Code|Signal|Background PIDs|Process Group PGID): ")
WRAP_HEAD = "{ "
WRAP_TAIL = "\n} 2>&1; printf '\\n[greenloop: exit %d]\\n' $?"
_EXIT_MARK = re.compile(r"(?<!\n)\n*\[greenloop: exit (\d+)\]\s*\Z")
_GEMINI_WRAP = re.compile(
    r"\A\s*<untrusted_context[^>]*>\n?(.*?)\n?</untrusted_context>\s*\Z", re.S
)
_CODEX_CUT = re.compile(
    r"\AWarning: truncated output \(original token count: (?P<tokens>\d+)\)\n"
    r"(?:Total output lines: \d+\n)?\n?"
)
_CODEX_MIDDLE = re.compile(r"…\d+ (?:chars|tokens) truncated…")
_COPILOT_END = re.compile(r"\n?<shellId: [^>\n]* completed with exit code (-?\d+)>\s*\Z")
_COPILOT_SAVED = re.compile(r"\AOutput too large to read at once [^\n]*?Saved to: ([^\n]+?)\n")


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """One shell command the agent ran, as the host reports it."""

    host: str
    event: str
    command: str
    cwd: Path
    output: str
    """stdout and stderr as the host merged them (both hosts hand over one stream)."""
    exit_code: int | None
    """None where the host sends none (Codex CLI): the runner's output tells it."""
    duration_s: float | None = None
    """None when the host gives no duration (Gemini CLI, Copilot CLI): none is shown then."""
    finished: bool = True
    """False for a run the host cut short (interrupted, timed out, moved to the background)."""
    cut: str = ""
    """How the host cut the output it handed over (only its head, its head and tail), in words:
    what is not in hand proves nothing, so no count or id is read from what is missing."""
    response: dict[str, object] = field(default_factory=dict)
    """Claude's ``tool_response``: the shape a replacement must keep."""
    permission_mode: str = ""
    """Claude Code's ``permission_mode`` on PreToolUse (``default``, ``bypassPermissions`` …)."""


def detect_host(data: dict[str, object], named: str | None) -> str:
    if named:
        return named
    if "toolName" in data or "tool_result" in data:  # Copilot CLI's own events, its Claude-format
        return "copilot"
    if "turn_id" in data:  # Codex CLI's events alone carry the turn
        return "codex"
    event = data.get("hook_event_name")
    return "gemini" if event == "AfterTool" or "llmContent" in _response(data) else "claude"


def read_call(data: dict[str, object], host: str, default_cwd: Path) -> ToolCall | None:
    """None when the event is not a finished shell command (another tool, a background run)."""
    tool, tool_input = tool_of(data)
    if tool not in SHELL_TOOLS or not isinstance(tool_input, dict):
        return None
    command = tool_input.get("command")
    if not isinstance(command, str) or not command.strip():
        return None
    base = cwd_of(data.get("cwd"), default_cwd)
    event = str(data.get("hook_event_name") or "")
    if host == "copilot":  # no wrap needed: postToolUse fires for a failing command too
        return _copilot_call(data, command, base, event)
    if host == "opencode":  # greenloop's own plugin sends it: tool.execute.after, after the run
        return _opencode_call(data, command, base, event)
    if event == "PreToolUse":
        background = tool_input.get("run_in_background") is True
        return ToolCall(
            host=host,
            event=event,
            command=command,
            cwd=base,
            output="",
            exit_code=0,
            finished=not background,
            response=dict(tool_input),
            permission_mode=str(data.get("permission_mode") or ""),
        )
    if host == "gemini":
        return _gemini_call(data, command, base, event)
    if host == "codex":
        return _codex_call(data, command, base, event)
    return _claude_call(data, command, base, event)


def _response(data: dict[str, object]) -> dict[str, object]:
    response = data.get("tool_response")
    return response if isinstance(response, dict) else {}


def _claude_call(data: dict[str, object], command: str, cwd: Path, event: str) -> ToolCall | None:
    if event == "PostToolUseFailure":
        error = data.get("error")
        if not isinstance(error, str) or data.get("is_interrupt") is True:
            return None
        found = _EXIT_LINE.match(error)
        if not found:  # a timeout, a permission refusal: no exit status to judge by
            return None
        return ToolCall(
            host="claude",
            event=event,
            command=command,
            cwd=cwd,
            output=error[found.end() :],
            exit_code=int(found.group(1)),
            duration_s=_seconds(data),
            cut=_claude_cut(error),
        )
    response = _response(data)
    stdout, stderr = response.get("stdout"), response.get("stderr")
    if not isinstance(stdout, str) or response.get("isImage") is True:
        return None
    merged = _persisted(response) or (
        stdout + (f"\n{stderr}" if isinstance(stderr, str) and stderr else "")
    )
    exit_code = 0  # PostToolUse fires for a Bash call only when it exited 0 ...
    wrapped = is_wrapped(command)
    mark = _EXIT_MARK.search(merged, max(0, len(merged) - 200)) if wrapped else None
    if wrapped:  # ... or when PreToolUse wrapped it to report its exit code in its output
        command = command[len(WRAP_HEAD) : -len(WRAP_TAIL)]
    if mark:
        merged, exit_code = merged[: mark.start()], int(mark.group(1))
    return ToolCall(
        host="claude",
        event=event or "PostToolUse",
        command=command,
        cwd=cwd,
        output=merged,
        exit_code=exit_code,
        duration_s=_seconds(data),
        finished=response.get("interrupted") is not True
        and not response.get("backgroundTaskId")
        and (mark is not None or not wrapped),  # the exit code was cut off: nothing to judge by
        response=dict(response),
    )


def _codex_call(data: dict[str, object], command: str, cwd: Path, event: str) -> ToolCall | None:
    """Codex CLI 0.171: ``tool_response`` is the output as the model would read it, with no exit
    code; past about 10,000 characters its head and tail only, under Codex's own header."""
    output = data.get("tool_response")
    if not isinstance(output, str):
        return None
    header = _CODEX_CUT.match(output)
    cut = ""
    if header:
        output = output[header.end() :]
        cut = f"Codex passed on only the head and tail of its {header['tokens']}-token output"
    elif _CODEX_MIDDLE.search(output):
        cut = "Codex passed on only the head and tail of the output"
    return ToolCall(
        host="codex", event=event or "PostToolUse", command=command, cwd=cwd, output=output,
        exit_code=None, cut=cut,
    )  # fmt: skip


def _opencode_call(data: dict[str, object], command: str, cwd: Path, event: str) -> ToolCall | None:
    """OpenCode (1.18.33): greenloop's plugin hands over ``tool.execute.after``'s ``output.output``
    (stdout and stderr merged), ``metadata.exit`` and ``metadata.truncated``."""
    response = _response(data)
    output, code = response.get("output"), response.get("exit")
    if not isinstance(output, str):
        return None
    return ToolCall(
        host="opencode", event=event or "tool.execute.after", command=command, cwd=cwd,
        output=output, exit_code=code if isinstance(code, int) and not isinstance(code, bool) else None,
        cut="OpenCode passed on only part of the output" if response.get("truncated") is True else "",
    )  # fmt: skip


def _claude_cut(error: str) -> str:
    """How Claude Code cut a failing command's text, in words ("" when it is whole)."""
    middle = _CLAUDE_MIDDLE.search(error)
    if middle:
        return (
            "Claude Code passed on only the head and tail of this failing command's output, "
            f"{int(middle[1]):,} characters cut from its middle"
        )
    if len(error) >= CLAUDE_ERROR_CAP:
        return "Claude Code passed on only part of this failing command's output"
    return ""


def _gemini_call(data: dict[str, object], command: str, cwd: Path, event: str) -> ToolCall | None:
    content = _response(data).get("llmContent")
    if not isinstance(content, str):
        return None
    wrapped = _GEMINI_WRAP.match(content)
    if wrapped:
        content = wrapped.group(1).replace("&lt;/untrusted_context&gt;", "</untrusted_context>")
    if not content.startswith("Output: "):  # cancelled, timed out, or moved to the background
        return None
    lines = content[len("Output: ") :].split("\n")
    tail: dict[str, str] = {}
    while lines and _GEMINI_TAIL.match(lines[-1]):
        key, _, value = lines.pop().partition(": ")
        tail[key] = value
    output = "\n".join(lines)
    return ToolCall(
        host="gemini",
        event=event or "AfterTool",
        command=command,
        cwd=cwd,
        output="" if output == "(empty)" else output,
        exit_code=_gemini_exit(tail.get("Exit Code", "")),
        finished="Signal" not in tail,
    )


def _copilot_call(data: dict[str, object], command: str, cwd: Path, event: str) -> ToolCall | None:
    result = data.get("toolResult", data.get("tool_result"))
    if not isinstance(result, dict):
        return None  # preToolUse
    ran = _copilot_output(result.get("textResultForLlm", result.get("text_result_for_llm")))
    if ran is not None and is_wrapped(command):  # a Claude-format PreToolUse entry wrapped it
        command, ran = command[len(WRAP_HEAD) : -len(WRAP_TAIL)], _unmarked(ran[0])
    if ran is None:
        return None
    result_type = result.get("resultType", result.get("result_type"))
    return ToolCall(
        host="copilot",
        event=event or "postToolUse",
        command=command,
        cwd=cwd,
        output=ran[0],
        exit_code=ran[1],
        response={"resultType": result_type if isinstance(result_type, str) else "success"},
    )


def _copilot_output(text: object) -> tuple[str, int] | None:
    """The merged output and exit code; None while the command runs on past ``initial_wait``,
    or when only the preview of a long output is left (its file is gone)."""
    end = _COPILOT_END.search(text) if isinstance(text, str) else None
    if not isinstance(text, str) or not end:
        return None
    output = text[: end.start()]
    saved = _COPILOT_SAVED.match(output)
    if saved:
        output = _read_capped(saved.group(1))
    return (output, int(end.group(1))) if output or not saved else None


def _unmarked(output: str) -> tuple[str, int] | None:
    """A wrapped command's output less the last line, which gives its own exit code."""
    mark = _EXIT_MARK.search(output, max(0, len(output) - 200))
    return (output[: mark.start()], int(mark.group(1))) if mark else None


def _persisted(response: dict[str, object]) -> str:
    """The whole output, where Claude Code kept it in a file (``stdout`` holds its first 30 000
    characters only, ``BASH_MAX_OUTPUT_LENGTH``)."""
    path = response.get("persistedOutputPath")
    return _read_capped(path) if isinstance(path, str) and path else ""


def _read_capped(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            return file.read(PERSISTED_CAP)
    except OSError:
        return ""


def is_wrapped(command: str) -> bool:
    return command.startswith(WRAP_HEAD) and command.endswith(WRAP_TAIL)


def wrap(command: str) -> str:
    """The command, run as it was, then its exit code printed on a line of its own, exit 0."""
    return f"{WRAP_HEAD}{command}{WRAP_TAIL}"


def _seconds(data: dict[str, object]) -> float | None:
    ms = data.get("duration_ms")
    return ms / 1000 if isinstance(ms, int | float) and not isinstance(ms, bool) else None


def render_reply(call: ToolCall, text: str, *, allowed_by: str = "") -> str:
    """The host's JSON that puts ``text`` where the model reads the command's output (on
    PreToolUse: the command run in place of the agent's, allowed where ``allowed_by`` names the
    user's rule that would have run the agent's own)."""
    if call.event == "PreToolUse":
        updated = {**call.response, "command": text}
        specific: dict[str, object] = {"hookEventName": "PreToolUse", "updatedInput": updated}
        if allowed_by:
            specific["permissionDecision"] = "allow"
            specific["permissionDecisionReason"] = (
                f"greenloop: the command as the agent wrote it, run to report its exit code; "
                f"allowed by {allowed_by}"
            )
        return json.dumps({"hookSpecificOutput": specific})
    if call.host == "copilot":
        return json.dumps({"modifiedResult": {**call.response, "textResultForLlm": text}})
    if call.host == "opencode":  # the plugin puts ``output`` in tool.execute.after's output
        return json.dumps({"output": text})
    if call.host == "codex":  # Codex >= 0.131: the model reads ``reason`` as the tool's output
        return json.dumps({"decision": "block", "reason": text})
    if call.host == "gemini":
        specific = {"hookEventName": "AfterTool", "tool_output": text}
        return json.dumps({"decision": "deny", "reason": text, "hookSpecificOutput": specific})
    if call.event == "PostToolUseFailure":  # Claude Code offers no replacement here
        specific = {"hookEventName": call.event, "additionalContext": text}
        return json.dumps({"hookSpecificOutput": specific})
    replaced = {**call.response, "stdout": text, "stderr": ""}
    specific = {"hookEventName": "PostToolUse", "updatedToolOutput": replaced}
    return json.dumps({"hookSpecificOutput": specific})


def _gemini_exit(said: str) -> int:
    """Gemini's ``Exit Code:`` line: a number (negative for a signal: -5 is SIGTRAP); none at all
    means 0. A value that is not a number is no success either."""
    text = said.strip()
    if not text:
        return 0
    try:
        return int(text)
    except ValueError:
        return 1

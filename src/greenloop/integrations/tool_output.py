"""``greenloop hook post-tool [--host NAME]``: the agent's own test runs, digested (issue 25).

The host hands the hook the output of a shell command the agent ran. When that command is a
verifier (a known runner invocation or a configured stage), the output is parsed, classified and
digested as ``greenloop check`` would -- nothing is run again -- and the digest replaces it, with
one line saying where the full output is saved. Anything else passes through untouched.

It runs on every shell call of the agent: a command that names no runner returns before
anything but ``json`` and ``re`` is imported. Whatever goes wrong, the session goes on: a bad
payload gets one line on stderr and exit 1, every host's non-blocking error.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from greenloop.integrations import tool_command, tool_gate, tool_hosts

TYPE_CHECKING = False  # not typing's: this runs on every shell call of the agent
if TYPE_CHECKING:
    import argparse

    from greenloop.integrations.tool_hosts import ToolCall

MAX_INPUT = tool_gate.MAX_INPUT
EXIT_NON_BLOCKING = 1  # Claude Code, Gemini CLI, Copilot CLI: output unchanged, the session goes on


@dataclass(frozen=True, slots=True, kw_only=True)
class HookAnswer:
    """What the hook writes: the host's JSON on stdout, one line on stderr, the exit code."""

    reply: str = ""
    message: str = ""
    exit_code: int = 0


def main_post_tool(args: argparse.Namespace) -> int:
    raw = getattr(args, "raw", None)  # read by the command line's gate already
    answer = run_post_tool(
        tool_gate.read_input(sys.stdin.buffer) if raw is None else raw, host=args.host
    )
    if answer.reply:
        sys.stdout.write(answer.reply + "\n")
    if answer.message:
        print(f"greenloop: {answer.message}", file=sys.stderr)
    return answer.exit_code


def run_post_tool(
    raw: bytes | int,
    *,
    host: str | None = None,
    default_cwd: Path = Path("."),
    environ: Mapping[str, str] = os.environ,
) -> HookAnswer:
    """Never raises: a broken hook must leave the tool output as it was and say why."""
    if tool_gate.switched_off(environ):
        return HookAnswer()
    if isinstance(raw, int):
        return _note(
            f"the hook input is {raw / 1e6:.1f} MB, over the {MAX_INPUT // 2**20} MB it reads; "
            "the tool output is passed through unchanged"
        )
    if host is not None and host not in tool_hosts.HOSTS:
        return _note(f"unknown host {host!r} (known: {', '.join(tool_hosts.HOSTS)})")
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        return _note(f"could not read the hook input (not JSON: {exc}); output passed through")
    if not isinstance(data, dict):
        return _note(f"could not read the hook input (a JSON {type(data).__name__}, not an object)")
    name = tool_hosts.detect_host(data, host)
    if environ.get("GREENLOOP_HOOK_LOG"):
        from greenloop.integrations.hosts import log_shape

        log_shape("post-tool", name, data, environ)
    call = tool_hosts.read_call(data, name, Path(environ.get("CLAUDE_PROJECT_DIR", default_cwd)))
    if call is None or not call.finished:
        return HookAnswer()
    try:
        return _digest_call(call, environ)
    except Exception as exc:  # the session must go on whatever broke here
        return _note(f"internal error digesting `{call.command[:80]}`: {exc!r}; output unchanged")


def _note(message: str) -> HookAnswer:
    return HookAnswer(message=" ".join(message.split()), exit_code=EXIT_NON_BLOCKING)


def _digest_call(call: ToolCall, environ: Mapping[str, str]) -> HookAnswer:
    named = tool_command.maybe_verifier(call.command)
    if not named and not tool_gate.may_run_a_stage(call.command, str(call.cwd)):
        return HookAnswer()  # the cheapest path: no runner named, no configured stage's program
    configured = _configured_stages(call.cwd)
    if not named and not configured:
        return HookAnswer()
    found = tool_command.find_verifier(call.command, tuple(s for s, _ in configured))
    if found is None:
        return HookAnswer()
    if call.event == "PreToolUse":  # Claude Code: a failing run could not be replaced after it
        if call.host != "claude" or tool_hosts.is_wrapped(call.command) or not _enabled(call.cwd):
            return HookAnswer()
        if not _post_tool_beside(call.cwd, environ):  # else the wrapped output is never read back
            return HookAnswer()
        return _wrap_answer(call, environ)
    from greenloop.errors import FatalError
    from greenloop.integrations import tool_digest

    try:
        text = tool_digest.replacement(call, found, environ)
    except FatalError as exc:  # a broken config: the user's to fix, the output stays as it was
        return _note(f"{exc}; output passed through")
    return HookAnswer(reply=tool_hosts.render_reply(call, text)) if text else HookAnswer()


WRAP_ALWAYS = "GREENLOOP_CLAUDE_WRAP"
"""Set to ``always`` by ``install claude --wrap``: wrap where no rule the hook can read allows the
command (Bash allowed on Claude Code's command line), leaving the decision to Claude Code."""


def _wrap_answer(call: ToolCall, environ: Mapping[str, str]) -> HookAnswer:
    """Wrap the command and allow it where the user's own rules would run it as written; where
    they would not, leave it to Claude Code's prompt (its failing output then gets the note)."""
    from greenloop.integrations import claude_permissions

    root = _project_root(call.cwd, environ)
    rule = claude_permissions.allowed_by(call.command, root, call.permission_mode, environ)
    if not rule and environ.get(WRAP_ALWAYS) != "always":
        return HookAnswer()
    wrapped = tool_hosts.wrap(call.command)
    return HookAnswer(reply=tool_hosts.render_reply(call, wrapped, allowed_by=rule))


def _project_root(cwd: Path, environ: Mapping[str, str]) -> Path:
    """Claude Code's project folder (where it was started), as it tells its hooks."""
    named = environ.get("CLAUDE_PROJECT_DIR")
    if named:
        return Path(named)
    from greenloop import git

    found = git.discover(cwd) if cwd.is_dir() else None
    return found[0] if found else cwd


def _post_tool_beside(cwd: Path, environ: Mapping[str, str]) -> bool:
    """Whether a Claude Code settings file that applies here runs ``hook post-tool`` on
    PostToolUse: a wrapped command exits 0 and hides its failure from everything but that hook."""
    from greenloop import git

    found = git.discover(cwd) if cwd.is_dir() else None
    root = found[0] if found else cwd
    home = environ.get("CLAUDE_CONFIG_DIR") or os.path.join(environ.get("HOME", "~"), ".claude")
    places = (root / ".claude" / "settings.json", root / ".claude" / "settings.local.json")
    return any(_runs_post_tool(p) for p in (*places, Path(home) / "settings.json"))


def _runs_post_tool(path: Path) -> bool:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    hooks = data.get("hooks") if isinstance(data, dict) else None
    groups = hooks.get("PostToolUse") if isinstance(hooks, dict) else None
    return isinstance(groups, list) and "hook post-tool" in json.dumps(groups)


def _enabled(cwd: Path) -> bool:
    from greenloop import git
    from greenloop.config import load_config

    found = git.discover(cwd) if cwd.is_dir() else None
    try:
        return load_config(found[0] if found else cwd).tool_output
    except Exception:  # a broken config is told after the run, not before it
        return True


def _configured_stages(cwd: Path) -> list[tuple[str, str]]:
    """(run, name) of the stages the repository configures, read only where a file has some."""
    if not tool_gate.configures_stages(str(cwd)):
        return []
    from greenloop import git
    from greenloop.config import load_config

    found = git.discover(cwd) if cwd.is_dir() else None
    try:
        return [(s.run, s.name) for s in load_config(found[0] if found else cwd).stages]
    except Exception:  # reported when a verifier's output is digested
        return []

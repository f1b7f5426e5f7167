"""Where each host reads its hook configuration, and the entries greenloop writes there.

From each host's documentation: Claude Code ``.claude/settings.json`` (``~/.claude``, or
``$CLAUDE_CONFIG_DIR``), Codex CLI ``.codex/hooks.json`` (``$CODEX_HOME``, default ``~/.codex``),
Gemini CLI ``.gemini/settings.json`` (``~/.gemini``), Copilot CLI ``.github/hooks/<name>.json``
(``$COPILOT_HOME/hooks``, default ``~/.copilot/hooks``; VS Code reads the same folder), Cursor
``.cursor/hooks.json`` (``~/.cursor``), the OpenHands SDK ``.openhands/hooks.json``
(``$OH_PERSISTENCE_DIR``, default ``~/.openhands``). Claude, Codex, Gemini and OpenHands nest
handlers in matcher groups; Copilot and Cursor list them flat under a ``"version": 1`` file.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from greenloop.errors import FatalError

if TYPE_CHECKING:
    from greenloop.config import Config

OURS = re.compile(r"\bgreenloop hook (?:stop|claude-stop|post-tool)\b")
"""A command of greenloop's hooks, whichever way install spelled greenloop."""
DEFAULT_TIMEOUT_S = 600
TOOL_OUTPUT_TIMEOUT_S = 60
POST_TOOL = "hook post-tool"


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    """One handler of ours under one event of a host's configuration."""

    event: str
    hook: Mapping[str, Any]
    matcher: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """One host's configuration file and what greenloop puts in it."""

    host: str
    path: Path
    grouped: bool
    """Handlers inside ``{"matcher": …, "hooks": [...]}`` groups (else a flat list per event)."""
    entries: tuple[Entry, ...]
    events: tuple[str, ...]
    """Every event greenloop may have written (uninstall looks under all of them)."""
    command_key: str = "command"
    own_file: bool = False
    """The file is greenloop's alone (Copilot reads every ``*.json`` of its hooks folder)."""
    note: str = ""
    """What the user must still do for the host to run the hook."""
    content: str = ""
    """A file of greenloop's own written whole (OpenCode's plugin), instead of JSON entries."""
    block: str = ""
    """Text appended to the file instead of JSON entries (Kimi Code's TOML ``[[hooks]]`` table)."""
    companions: tuple[tuple[Path, str], ...] = ()
    """Files written beside it when absent, removed with it (Goose's plugin manifest)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """What the entries depend on: the command line, the verifier's timeout, the bound."""

    base: str
    """``greenloop``, or this installation by its path (``/venv/bin/python -m greenloop``)."""
    timeout_s: int = DEFAULT_TIMEOUT_S
    max_iters: int = 5
    tool_output: bool = True
    wrap: bool = False
    """Claude Code: the PreToolUse wrap too (``install claude --wrap``)."""
    goal: bool = False
    """The Stop hook as a goal loop's judge: only a trusted green allows the stop."""


def timeout_of(config: Config) -> int:
    """The verifier's timeout: every configured stage's, or one stage's when they are detected."""
    stages = [s.timeout or config.timeout for s in config.stages]
    return max(DEFAULT_TIMEOUT_S, math.ceil(sum(stages) if stages else config.timeout))


def target(
    host: str, root: Path, *, global_: bool, settings: Settings, environ: Mapping[str, str]
) -> Target:
    build = BUILDERS.get(host)
    if build is None:
        raise FatalError(f"unknown host {host!r}: one of {', '.join(BUILDERS)}")
    return build(root, global_, settings, environ)


def _home(environ: Mapping[str, str], what: str) -> Path:
    home = environ.get("HOME")
    if not home:
        raise FatalError(f"HOME is not set: cannot find {what}")
    return Path(home)


def _stop(settings: Settings, host: str) -> str:
    named = f" --host {host}" if host != "claude" else ""
    return f"{settings.base} hook stop{named}" + (" --goal" if settings.goal else "")


def _claude(root: Path, global_: bool, s: Settings, environ: Mapping[str, str]) -> Target:
    # no --host: Cursor and Copilot read Claude's settings too, and the hook tells them apart
    if global_:
        folder = environ.get("CLAUDE_CONFIG_DIR") or str(_home(environ, "~/.claude") / ".claude")
        path = Path(folder) / "settings.json"
    else:
        path = root / ".claude" / "settings.json"
    stop = Entry(
        event="Stop",
        hook={"type": "command", "command": _stop(s, "claude"), "timeout": s.timeout_s},
    )
    tool = Entry(
        event="PostToolUse",
        matcher="Bash",
        hook={
            "type": "command",
            "command": f"{s.base} {POST_TOOL}",
            "timeout": TOOL_OUTPUT_TIMEOUT_S,
        },
    )
    # a Bash call that exits non-zero reaches PostToolUseFailure instead (additionalContext only)
    failed = Entry(event="PostToolUseFailure", matcher="Bash", hook=tool.hook)
    entries: tuple[Entry, ...] = (stop, tool, failed) if s.tool_output else (stop,)
    note = ""
    if s.tool_output:  # issue 36: the red run's digest replaces its output where it may
        wrap = {**tool.hook, "command": f"GREENLOOP_CLAUDE_WRAP=always {tool.hook['command']}"}
        entries = (
            *entries,
            Entry(event="PreToolUse", matcher="Bash", hook=wrap if s.wrap else tool.hook),
        )
        note = _claude_mode(root, environ, wrap=s.wrap)
    return Target(
        host="claude",
        path=path,
        grouped=True,
        entries=entries,
        events=("Stop", "PostToolUse", "PostToolUseFailure", "PreToolUse"),
        note=note,
    )


def _claude_mode(root: Path, environ: Mapping[str, str], *, wrap: bool) -> str:
    """What the agent's own verifier runs will get, and why: the wrap's reach is the user's
    own permission rules, read again on every call."""
    from greenloop.integrations import claude_permissions

    if wrap:
        return (
            "mode: wrap, always: every verifier command the agent runs is wrapped to end in its "
            "exit code, so a failing run's digest replaces its output; where no rule of yours "
            "allows it, Claude Code decides on the wrapped command (it runs with --allowedTools "
            "Bash on its command line; a prefix rule does not match it)"
        )
    rules = [r for r in claude_permissions.rules(root, environ)["allow"] if r.startswith("Bash")]
    said = ", ".join(dict.fromkeys(rules)) or "none"
    trusted = "" if claude_permissions.trusted(root, environ) else (
        "; this project is not trusted in Claude Code yet, so its own settings' rules are not "
        "read until it is"
    )  # fmt: skip
    return (
        "mode: wrap where your rules allow: a verifier command your Claude Code permission rules "
        "(or bypassPermissions) would run as written is wrapped to end in its exit code and "
        "allowed, so a failing run's digest replaces its output; any other keeps Claude Code's "
        f"own prompt and cut, with greenloop's digest beside it. Bash rules found: {said}{trusted}"
    )


def _codex(root: Path, global_: bool, s: Settings, environ: Mapping[str, str]) -> Target:
    if global_:
        folder = environ.get("CODEX_HOME") or str(_home(environ, "~/.codex") / ".codex")
        path = Path(folder) / "hooks.json"
    else:
        path = root / ".codex" / "hooks.json"
    stop = Entry(
        event="Stop", hook={"type": "command", "command": _stop(s, "codex"), "timeout": s.timeout_s}
    )
    note = (
        "Codex runs a new or changed hook only once it is trusted (review it with /hooks in "
        "codex; automation that vets its hooks passes --dangerously-bypass-hook-trust), and a "
        "project's hooks only in a trusted project."
    )
    # Codex >= 0.131 gives the model a PostToolUse hook's block reason as the tool's output
    tool = Entry(
        event="PostToolUse",
        matcher="Bash",
        hook={
            "type": "command",
            "command": f"{s.base} {POST_TOOL} --host codex",
            "timeout": TOOL_OUTPUT_TIMEOUT_S,
        },
    )
    return Target(
        host="codex",
        path=path,
        grouped=True,
        entries=(stop, tool) if s.tool_output else (stop,),
        events=("Stop", "PostToolUse"),
        note=note,
    )


def _gemini(root: Path, global_: bool, s: Settings, environ: Mapping[str, str]) -> Target:
    base = _home(environ, "~/.gemini") if global_ else root
    path = base / ".gemini" / "settings.json"
    stop = Entry(
        event="AfterAgent",
        hook={
            "name": "greenloop",
            "type": "command",
            "command": _stop(s, "gemini"),
            "timeout": s.timeout_s * 1000,  # milliseconds (its default: 60 000)
        },
    )
    tool = Entry(
        event="AfterTool",
        matcher="run_shell_command",
        hook={
            "name": "greenloop-tool-output",
            "type": "command",
            "command": f"{s.base} {POST_TOOL} --host gemini",
            "timeout": TOOL_OUTPUT_TIMEOUT_S * 1000,
        },
    )
    entries = (stop, tool) if s.tool_output else (stop,)
    note = (
        ""
        if global_
        else "Gemini CLI reads a project's settings, and so its hooks, only in a trusted folder "
        "(trust it when asked; headless: GEMINI_CLI_TRUST_WORKSPACE=true, as --skip-trust "
        "trusts it too late for that)."
    )
    return Target(
        host="gemini",
        path=path,
        grouped=True,
        entries=entries,
        events=("AfterAgent", "AfterTool"),
        note=note,
    )


def _copilot(root: Path, global_: bool, s: Settings, environ: Mapping[str, str]) -> Target:
    if global_:
        folder = environ.get("COPILOT_HOME") or str(_home(environ, "~/.copilot") / ".copilot")
        path = Path(folder) / "hooks" / "greenloop.json"
    else:
        path = root / ".github" / "hooks" / "greenloop.json"
    stop = Entry(
        event="agentStop",
        hook={"type": "command", "bash": _stop(s, "copilot"), "timeoutSec": s.timeout_s},
    )
    # VS Code loads every *.json of .github/hooks too, but reads agentStop as an "AgentStop" it
    # never fires: its Stop gate is this entry. No --host: the payload says which host sent it
    # (Copilot CLI runs it too, and its second entry of one stop runs nothing). VS Code counts
    # `timeout`, Copilot CLI `timeoutSec`: both are set, or VS Code's 30 s would cut the suite.
    vscode = Entry(
        event="Stop",
        hook={
            "type": "command",
            "bash": f"{s.base} hook stop" + (" --goal" if s.goal else ""),
            "timeout": s.timeout_s,
            "timeoutSec": s.timeout_s,
        },
    )
    # fires for a command that exits non-zero too; the matcher keeps it off every other tool
    tool = Entry(
        event="postToolUse",
        hook={
            "type": "command",
            "bash": f"{s.base} {POST_TOOL} --host copilot",
            "matcher": "bash",
            "timeoutSec": TOOL_OUTPUT_TIMEOUT_S,
        },
    )
    return Target(
        host="copilot",
        path=path,
        grouped=False,
        entries=(stop, vscode, tool) if s.tool_output else (stop, vscode),
        events=("agentStop", "Stop", "postToolUse"),
        command_key="bash",
        own_file=True,
    )


def _cursor(root: Path, global_: bool, s: Settings, environ: Mapping[str, str]) -> Target:
    base = _home(environ, "~/.cursor") if global_ else root
    path = base / ".cursor" / "hooks.json"
    stop = Entry(
        event="stop",
        hook={"command": _stop(s, "cursor"), "timeout": s.timeout_s, "loop_limit": s.max_iters},
    )
    return Target(host="cursor", path=path, grouped=False, entries=(stop,), events=("stop",))


def _openhands(root: Path, global_: bool, s: Settings, environ: Mapping[str, str]) -> Target:
    if global_:
        folder = environ.get("OH_PERSISTENCE_DIR") or str(
            _home(environ, "~/.openhands") / ".openhands"
        )
        path = Path(folder) / "hooks.json"
    else:
        path = root / ".openhands" / "hooks.json"
    stop = Entry(
        event="Stop",
        hook={"type": "command", "command": _stop(s, "openhands"), "timeout": s.timeout_s},
    )
    note = (
        "The SDK runs them once the conversation is given the file: "
        "Conversation(..., hook_config=HookConfig.load(working_dir=...)); the OpenHands CLI "
        "loads it by itself."
    )
    return Target(
        host="openhands", path=path, grouped=True, entries=(stop,), events=("Stop",), note=note
    )


OPENCODE_PLUGIN = """// greenloop's plugin for OpenCode (written by `greenloop install opencode`; removed by
// `greenloop uninstall opencode`). After each bash call, `greenloop hook post-tool` reads the
// output and, for a test or lint run it knows, hands back what the model reads instead: the
// digest of a red run, one line for a green one. Anything else is left as it was.
import { spawnSync } from "node:child_process";

const COMMAND = __COMMAND__;

export const Greenloop = async ({ directory }) => ({
  "tool.execute.after": async (input, output) => {
    if (input.tool !== "bash" || typeof output?.output !== "string") return;
    const args = input.args ?? {};
    const payload = JSON.stringify({
      hook_event_name: "tool.execute.after",
      tool_name: "bash",
      tool_input: args,
      cwd: typeof args.workdir === "string" ? args.workdir : directory,
      tool_response: {
        output: output.output,
        exit: output.metadata?.exit ?? null,
        truncated: output.metadata?.truncated === true,
      },
    });
    const ran = spawnSync("sh", ["-c", COMMAND], {
      input: payload, cwd: directory, encoding: "utf8", timeout: __TIMEOUT_MS__,
    });
    if (ran.status !== 0 || !ran.stdout) return;
    try {
      const reply = JSON.parse(ran.stdout);
      if (typeof reply.output === "string") output.output = reply.output;
    } catch {}
  },
});
"""


def _opencode(root: Path, global_: bool, s: Settings, environ: Mapping[str, str]) -> Target:
    if global_:
        folder = environ.get("XDG_CONFIG_HOME") or str(_home(environ, "~/.config") / ".config")
        path = Path(folder) / "opencode" / "plugin" / "greenloop.js"
    else:
        path = root / ".opencode" / "plugin" / "greenloop.js"
    import json

    command = f"{s.base} {POST_TOOL} --host opencode"
    content = OPENCODE_PLUGIN.replace("__COMMAND__", json.dumps(command)).replace(
        "__TIMEOUT_MS__", str(TOOL_OUTPUT_TIMEOUT_S * 1000)
    )
    note = (
        "OpenCode has no stop gate (its session.idle event only observes): this plugin digests "
        "the agent's own test runs; bound a run with `greenloop run --agent` or CI."
    )
    return Target(
        host="opencode",
        path=path,
        grouped=False,
        entries=(Entry(event="tool.execute.after", hook={"command": command}),),
        events=("tool.execute.after",),
        own_file=True,
        note=note,
        content=content,
    )


def _goose(root: Path, global_: bool, s: Settings, environ: Mapping[str, str]) -> Target:
    base = _home(environ, "~/.agents") if global_ else root
    plugin = base / ".agents" / "plugins" / "greenloop"
    stop = Entry(
        event="Stop",
        hook={"type": "command", "command": _stop(s, "goose"), "timeout": s.timeout_s},
    )
    manifest = (
        '{"name": "greenloop", "version": "1.0.0", "description": "greenloop\'s Stop gate"}\n'
    )
    return Target(
        host="goose",
        path=plugin / "hooks" / "hooks.json",
        grouped=True,
        entries=(stop,),
        events=("Stop",),
        own_file=True,
        companions=((plugin / "plugin.json", manifest),),
        note="By contract: no Goose runs here. Goose caps consecutive blocks itself "
        "(GOOSE_STOP_HOOK_BLOCK_CAP).",
    )


KIMI_MAX_TIMEOUT_S = 600  # its config refuses a hook timeout past 600 s


def _kimi(root: Path, global_: bool, s: Settings, environ: Mapping[str, str]) -> Target:
    path = _home(environ, "~/.kimi-code") / ".kimi-code" / "config.toml"
    command = _stop(s, "kimi").replace('"', '\\"')
    block = (
        "\n# greenloop's Stop gate (`greenloop uninstall kimi` removes this table)\n"
        f'[[hooks]]\nevent = "Stop"\ncommand = "{command}"\n'
        f"timeout = {min(s.timeout_s, KIMI_MAX_TIMEOUT_S)}\n"
    )
    note = (
        "By contract: no Kimi Code runs here. Kimi reads hooks from this file only: every project."
    )
    return Target(
        host="kimi",
        path=path,
        grouped=False,
        entries=(Entry(event="Stop", hook={"command": _stop(s, "kimi")}),),
        events=("Stop",),
        note=note,
        block=block,
    )


def codex_config(root: Path, environ: Mapping[str, str]) -> str:
    """What Codex's ``config.toml`` files say about hooks: a warning when they are off. A file
    that is not valid TOML is refused (Codex itself would not start), and nothing is written."""
    import tomllib

    home = environ.get("CODEX_HOME") or os.path.join(environ.get("HOME", ""), ".codex")
    for path in (Path(home) / "config.toml", root / ".codex" / "config.toml"):
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise FatalError(
                f"cannot read {path}: {exc}; Codex would not start either: fix it, then re-run "
                "(nothing was changed)"
            ) from exc
        features = data.get("features")
        if isinstance(features, dict) and False in (
            features.get("hooks"),
            features.get("codex_hooks"),
        ):
            return f"{path} turns Codex's hooks off ([features] hooks = false): turn them on for this one to run."
    return ""


BUILDERS = {
    "claude": _claude,
    "codex": _codex,
    "gemini": _gemini,
    "copilot": _copilot,
    "cursor": _cursor,
    "openhands": _openhands,
    "opencode": _opencode,
    "goose": _goose,
    "kimi": _kimi,
}

"""Any shell command as an agent, and the presets for known agent CLIs."""

from __future__ import annotations

import os
import re
import shlex
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from greenloop.agents.base import AgentOutcome, AgentRequest, Usage
from greenloop.agents.presets import PRESETS
from greenloop.agents.usage import REPORTS_USAGE, usage_from_file, usage_from_output
from greenloop.errors import FatalError
from greenloop.processes.executables import executable_of
from greenloop.processes.orphans import describe
from greenloop.processes.process import build_env, run_command, shell_can_run

_SUMMARY = re.compile(r"^\s*(?:greenloop[-_ ])?summary:\s*(\S.*)$", re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandAgent:
    """Runs a shell command in the repo root with the prompt on stdin and in $GREENLOOP_PROMPT_FILE."""

    command: str
    later_command: str | None = None
    label: str = "command"
    extra_env: tuple[tuple[str, str], ...] = ()
    environ: Mapping[str, str] | None = None
    continues: bool = True
    """False: each call is a fresh session of the agent, so the loop repeats the task."""
    preset: str = ""
    """The preset this command came from: its own output may carry its usage."""

    @property
    def reports_usage(self) -> str:
        """``cost``, ``tokens`` or ``""``: what the loop's budget can count for this agent."""
        if self.preset == "claude":
            return "cost"
        return "tokens" if self.preset in REPORTS_USAGE else ""

    @property
    def name(self) -> str:
        return self.label

    def describe(self) -> str:
        if self.later_command and self.later_command != self.command:
            return f"{self.command}  (from iteration 2: {self.later_command})"
        return self.command

    def run(self, request: AgentRequest) -> AgentOutcome:
        template = (
            self.later_command if request.iteration > 1 and self.later_command else self.command
        )
        command = template.replace("{prompt_file}", shlex.quote(str(request.prompt_file)))
        summary_file = request.prompt_file.with_name(request.prompt_file.stem + ".summary")
        usage_file = request.prompt_file.with_name(request.prompt_file.stem + ".usage.json")
        env = build_env(
            self.environ if self.environ is not None else os.environ,
            {
                "GREENLOOP_PROMPT_FILE": str(request.prompt_file),
                "GREENLOOP_SUMMARY_FILE": str(summary_file),
                "GREENLOOP_USAGE_FILE": str(usage_file),
                "GREENLOOP_ITERATION": str(request.iteration),
                "GREENLOOP_MAX_ITERS": str(request.max_iters),
                "GREENLOOP_RUN_ID": request.run_id,
                **dict(self.extra_env),
            },
        )
        result = run_command(
            command,
            cwd=request.repo,
            timeout_s=request.timeout_s,
            env=env,
            stdin_path=request.prompt_file,
            redacted=True,
        )
        ok = result.exit_code == 0 and not result.timed_out
        error = ""
        if result.timed_out:
            error = f"the agent timed out after {request.timeout_s:.0f} s"
        elif result.exit_code != 0:
            error = f"the agent exited {result.exit_code}"
        return AgentOutcome(
            ok=ok,
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            duration_s=result.duration_s,
            output=result.merged,
            summary=read_summary(summary_file, result.merged),
            error=error,
            usage=usage_from_file(usage_file)
            or usage_from_output(self.preset, result.merged)
            or Usage(),
            stopped=describe(result.escaped) if result.escaped else "",
        )


def read_summary(summary_file: Path, output: str) -> str:
    """The agent's one-line summary: $GREENLOOP_SUMMARY_FILE, else a ``Summary:`` line it printed."""
    try:
        text = summary_file.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        text = ""
    if text:
        return text.splitlines()[0].strip()
    found = _SUMMARY.findall(output)
    return found[-1].strip() if found else ""


def _meant_preset(word: str) -> str:
    """`` Did you mean the preset 'claude'?`` for a near miss of a preset's name, else ""."""
    import difflib  # only on an error

    close = difflib.get_close_matches(word, sorted(PRESETS), n=1, cutoff=0.75)
    return f" Did you mean the preset {close[0]!r}?" if close else ""


def make_command_agent(spec: str, environ: Mapping[str, str] = os.environ) -> CommandAgent:
    """A preset name, or any shell command."""
    preset = PRESETS.get(spec)
    if preset is None:
        word = executable_of(spec)
        path = Path(word).expanduser()
        if "/" in word and not (path.is_file() and os.access(path, os.X_OK)):
            raise FatalError(_bad_path(spec, word, path))  # a path: PATH has no part in it
        if word and not shell_can_run(word, environ):
            raise FatalError(
                f"--agent {spec!r}: `{word}` is not a command sh can find (not on PATH, not a "
                f"builtin).{_meant_preset(word)} Check the spelling, or use a preset: "
                f"{', '.join(sorted(PRESETS))}."
            )
        return CommandAgent(command=spec, label=_label(spec), environ=environ)
    if not shutil.which(preset.executable, path=environ.get("PATH")):
        raise FatalError(
            f"agent preset {preset.name!r} runs `{preset.executable}`, which is not on PATH. "
            f"Install it, or pass any shell command as --agent."
        )
    return CommandAgent(
        command=preset.first,
        later_command=preset.later,
        label=preset.name,
        extra_env=preset.env,
        environ=environ,
        continues=preset.continues,
        preset=preset.name,
    )


def _bad_path(spec: str, word: str, path: Path) -> str:
    """A path given as --agent that cannot run: missing, a directory, or not executable."""
    if not path.exists():
        return f"--agent {spec!r}: {word} does not exist (in {Path.cwd()}). Check the path."
    if path.is_dir():
        return f"--agent {spec!r}: {word} is a directory, not a program."
    return (
        f"--agent {spec!r}: {word} is not executable: chmod +x {word}, or run it through "
        f"its interpreter (--agent 'sh {word}')."
    )


def _label(command: str) -> str:
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    return Path(words[0]).name if words else "command"

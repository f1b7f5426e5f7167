"""Runs a composite action's ``run:`` steps through bash as the GitHub Actions runner does.

What the runner does for each step of a composite action, and this does too: ``${{ … }}`` in
``env``, ``working-directory``, ``with`` and ``run`` is replaced from the ``inputs`` (``with:``
values, else the defaults, themselves expressions), ``github``, ``runner`` and ``steps``
contexts; ``if`` is ``success()`` unless it says otherwise; the script is written to a file under
``$RUNNER_TEMP`` and run as ``bash --noprofile --norc -e -o pipefail FILE`` (the runner's command
for ``shell: bash``) in the step's working directory, with the job's environment, the step's
``env``, ``GITHUB_ACTION_PATH`` and a fresh ``$GITHUB_OUTPUT`` and ``$GITHUB_STEP_SUMMARY`` file of
its own, read back afterwards (``name=value`` and ``name<<DELIMITER`` blocks). A ``uses:`` step, or
a step whose id is in ``fake_outputs``, is not run: it is recorded with its evaluated ``with:``
and its outputs are taken from ``fake_outputs``.

Only what greenloop's action.yml uses is understood (property paths, ``always()``); anything
else raises, so an expression this does not know fails the test rather than passing unread.
"""

from __future__ import annotations

import re
import subprocess
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from limits import hang

EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
BASH = ("bash", "--noprofile", "--norc", "-e", "-o", "pipefail")  # the runner's `shell: bash`
STEP_TIMEOUT_S = hang(600)


@dataclass
class StepRun:
    id: str
    name: str
    ran: bool
    uses: str = ""
    with_: dict[str, str] = field(default_factory=dict)
    exit_code: int = 0
    stdout: str = ""
    stderr: str = ""
    outputs: dict[str, str] = field(default_factory=dict)
    output_file: str = ""
    summary: str = ""


@dataclass
class ActionRun:
    steps: list[StepRun]
    outputs: dict[str, str]

    @property
    def log(self) -> str:
        return "".join(s.stdout + s.stderr for s in self.steps)

    @property
    def summary(self) -> str:
        """The job's summary: each step's own file, in order (what the runner uploads)."""
        return "".join(s.summary for s in self.steps)

    def step(self, step_id: str) -> StepRun:
        return next(s for s in self.steps if s.id == step_id)


def run_action(
    action_dir: Path,
    *,
    with_: Mapping[str, str],
    env: Mapping[str, str],
    github: Mapping[str, Any],
    runner_temp: Path,
    workspace: Path,
    fake_outputs: Mapping[str, Mapping[str, str]],
) -> ActionRun:
    """The action in ``action_dir`` as one ``uses:`` step of a job would run it."""
    action = yaml.safe_load((action_dir / "action.yml").read_text())
    github = {**github, "action_path": str(action_dir), "workspace": str(workspace)}
    contexts: dict[str, Any] = {
        "github": github,
        "runner": {"temp": str(runner_temp), "os": "Linux"},
    }
    contexts["inputs"] = _inputs(action, with_, contexts)
    contexts["steps"] = {}
    steps: list[StepRun] = []
    for index, spec in enumerate(action["runs"]["steps"]):
        step_id = str(spec.get("id", f"__{index}"))
        if not _should_run(spec.get("if"), steps):
            steps.append(StepRun(id=step_id, name=spec.get("name", ""), ran=False))
            continue
        if "uses" in spec or step_id in fake_outputs:
            done = StepRun(
                id=step_id, name=spec.get("name", ""), ran=True, uses=spec.get("uses", "")
            )
            done.with_ = {k: substitute(str(v), contexts) for k, v in spec.get("with", {}).items()}
            done.outputs = dict(fake_outputs.get(step_id, {}))
        else:
            done = _run_step(step_id, spec, contexts, env, action_dir, runner_temp, workspace)
        contexts["steps"][step_id] = {"outputs": done.outputs}
        steps.append(done)
    outputs = {k: substitute(str(v["value"]), contexts) for k, v in action["outputs"].items()}
    return ActionRun(steps=steps, outputs=outputs)


def substitute(text: str, contexts: Mapping[str, Any]) -> str:
    """Every ``${{ expr }}`` in ``text`` replaced by its value ('' for a missing property)."""
    return EXPRESSION.sub(lambda m: _value(m.group(1), contexts), text)


def _value(expression: str, contexts: Mapping[str, Any]) -> str:
    if not re.fullmatch(r"[A-Za-z_][\w-]*(\.[A-Za-z_][\w-]*)*", expression):
        raise NotImplementedError(f"expression not understood here: {expression!r}")
    value: Any = contexts
    for part in expression.split("."):
        value = value.get(part, "") if isinstance(value, Mapping) else ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _inputs(
    action: dict[str, Any], with_: Mapping[str, str], contexts: dict[str, Any]
) -> dict[str, str]:
    unknown = set(with_) - set(action["inputs"])
    if unknown:
        raise ValueError(f"unexpected inputs {sorted(unknown)}: the runner warns and ignores them")
    values = {}
    for name, spec in action["inputs"].items():
        if name in with_:
            values[name] = with_[name]
        elif spec.get("required"):
            raise ValueError(f"input required and not supplied: {name}")
        else:
            values[name] = substitute(str(spec.get("default", "")), contexts)
    return values


def _should_run(condition: object, done: list[StepRun]) -> bool:
    if condition is None:  # success(): every earlier step that ran succeeded
        return all(s.exit_code == 0 for s in done)
    if str(condition).strip() == "always()":
        return True
    raise NotImplementedError(f"if: {condition!r} is not understood here")


def _run_step(
    step_id: str,
    spec: dict[str, Any],
    contexts: dict[str, Any],
    job_env: Mapping[str, str],
    action_dir: Path,
    runner_temp: Path,
    workspace: Path,
) -> StepRun:
    if spec.get("shell") != "bash":
        raise NotImplementedError(f"shell {spec.get('shell')!r}")
    token = uuid.uuid4().hex
    script = runner_temp / f"{token}.sh"
    script.write_text(substitute(spec["run"], contexts))
    output, summary = runner_temp / f"output_{token}", runner_temp / f"summary_{token}"
    output.touch()
    summary.touch()
    env = {**job_env, **{k: substitute(str(v), contexts) for k, v in spec.get("env", {}).items()}}
    env |= {
        "GITHUB_OUTPUT": str(output),
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_ACTION_PATH": str(action_dir),
    }
    cwd = workspace / substitute(str(spec.get("working-directory", ".")), contexts)
    done = subprocess.run(
        [*BASH, str(script)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=STEP_TIMEOUT_S,
        check=False,
    )
    return StepRun(
        id=step_id,
        name=spec.get("name", ""),
        ran=True,
        exit_code=done.returncode,
        stdout=done.stdout,
        stderr=done.stderr,
        outputs=parse_output_file(output.read_text()),
        output_file=output.read_text(),
        summary=summary.read_text(),
    )


def parse_output_file(text: str) -> dict[str, str]:
    """``$GITHUB_OUTPUT`` as the runner reads it: ``name=value`` lines and heredoc blocks."""
    values: dict[str, str] = {}
    lines = iter(text.splitlines())
    for line in lines:
        if not line:
            continue
        name, eq, value = line.partition("=")
        heredoc = re.fullmatch(r"([^=<]+)<<(.+)", line)
        if heredoc and (not eq or "<<" in name):
            body = []
            for inner in lines:
                if inner == heredoc.group(2):
                    break
                body.append(inner)
            values[heredoc.group(1)] = "\n".join(body)
        elif eq:
            values[name] = value
        else:
            raise ValueError(f"invalid $GITHUB_OUTPUT line (the runner fails the step): {line!r}")
    return values

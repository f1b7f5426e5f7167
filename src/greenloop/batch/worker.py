"""One task: a fresh clone, its setup, ``run_loop`` through the public API, its row and record.

The same function runs in a local pool process (``python -m greenloop.batch.worker JOB OUT``) and
in a Ray task; it never writes ``results.jsonl`` (only the driver does).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from greenloop.batch import workspace
from greenloop.batch.limiter import FileSlots, LimitedAgent, Slots
from greenloop.batch.tasks import Task
from greenloop.errors import FatalError
from greenloop.verify.acceptance import WrongDeclaration

PARENT_POLL_S = 0.5


@dataclass(frozen=True, slots=True, kw_only=True)
class Job:
    """What a worker needs to run one task (JSON for a pool process, pickled for Ray)."""

    task: Task
    agent: str | None
    """``--agent``; the task's own ``agent`` wins."""
    overrides: tuple[tuple[str, Any], ...] = ()
    """Run options given on the command line (``max_iters``, ``timeout`` …)."""
    work_root: str
    aside_root: str
    slots_dir: str = ""
    max_parallel_agents: int = 0
    attempt: int = 1
    executor: str = "local"


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    row: dict[str, Any]
    record: dict[str, bytes] = field(default_factory=dict)
    """The run record's files by relative path (report.json, events.jsonl, digests, diffs)."""


def run_task(
    job: Job,
    *,
    bundle: Path | None = None,
    slots: Slots | None = None,
    phase: Callable[[str], None] = lambda phase: None,
) -> Outcome:
    start = time.monotonic()
    task = job.task
    dest = _workspace_dir(job)
    setup_log = ""
    try:
        phase("clone")
        initial = workspace.clone_task(task, dest, bundle=bundle)
        phase("setup")
        setup = workspace.run_setup(task, dest)
        if setup is not None:
            setup_log = setup.merged
            if setup.exit_code != 0:
                row = _setup_failed(setup.exit_code, setup.merged, initial)
                return _outcome(job, row, dest, start, {"setup.log": setup_log.encode()})
        row, record = _run_loop(job, dest, slots, phase)
    except WrongDeclaration as exc:  # SWE-bench's harness drops such an instance: so do we
        row = {"result": "invalid", "reason": str(exc).splitlines()[0], "iterations": 0}
        record = {}
    except FatalError as exc:
        row = {"result": "error", "reason": str(exc).splitlines()[0], "iterations": 0}
        record = {}
    except KeyboardInterrupt:
        row = {"result": "interrupted", "reason": "interrupted before the loop", "iterations": 0}
        record = {}
    if setup_log:
        record["setup.log"] = setup_log.encode()
    return _outcome(job, row, dest, start, record)


def _workspace_dir(job: Job) -> Path:
    dest = Path(job.work_root) / job.task.id
    try:
        workspace.set_aside(dest, Path(job.aside_root))
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError:  # a Ray node without the driver's disk layout: a local temporary folder
        dest = Path(tempfile.mkdtemp(prefix=f"greenloop-{job.task.id}-")) / job.task.id
    return dest


def _run_loop(
    job: Job, dest: Path, slots: Slots | None, phase: Callable[[str], None]
) -> tuple[dict[str, Any], dict[str, bytes]]:
    from greenloop.agents.factory import make_agent
    from greenloop.config import load_config
    from greenloop.loop.loop import run_loop

    task = job.task
    config = load_config(dest, _overrides(job))
    agent = make_agent(task.agent or job.agent, config)
    limited = LimitedAgent(inner=agent, slots=slots) if slots is not None else None
    result = run_loop(
        dest,
        limited or agent,
        config=config,
        command=_command(task),
        phase=phase,  # the loop says when a phase begins: "iter 2/5 · agent", "… · verify"
    )
    row = _row_of(result) | _invalid(result) | _what_failed(result)
    if limited is not None:
        row["agent_slot_wait_s"] = round(sum(limited.waits), 3)
    return row, _read_record(Path(result.record_dir))


def _overrides(job: Job) -> dict[str, Any]:
    values = dict(job.overrides)
    task = job.task
    for key in ("task", "max_iters", "timeout"):
        if getattr(task, key) is not None:
            values[key] = getattr(task, key)
    if task.fail_to_pass:  # declared acceptance: `greenloop run --must-pass ID …`
        values["must_pass"] = task.fail_to_pass
    if task.pass_to_pass:
        values["pass_to_pass"] = task.pass_to_pass
    return values


def _command(task: Task) -> tuple[str, ...]:
    if task.verifier is None:
        return ()
    if isinstance(task.verifier, str):
        return ("sh", "-c", task.verifier)
    return task.verifier


def _row_of(result: Any) -> dict[str, Any]:
    history = result.history
    usage = [h.usage for h in history]
    requests = sum(u.requests for u in usage)
    costs = [u.cost_usd for u in usage if u.cost_usd is not None]
    return {
        "result": result.result.value,
        "reason": result.reason,
        "iterations": result.iterations,
        "loop_s": round(result.duration_s, 3),
        "agent_s": round(sum(h.agent_s for h in history), 3),
        "verifier_s": round(sum(h.verifier_s for h in history), 3),
        "prompt_tokens": sum(u.prompt_tokens for u in usage) if requests else None,
        "completion_tokens": sum(u.completion_tokens for u in usage) if requests else None,
        "cost_usd": round(sum(costs), 6) if costs else None,
        "agent_retry_wait_s": round(sum(u.retry_wait_s for u in usage), 3) if requests else None,
        "initial_sha": result.initial_sha,
        "final_sha": result.final_sha,
        "attempt_ref": result.attempt_ref,
        "run_id": result.run_id,
        "suspicious": [f.kind for f in result.suspicious],
    } | _acceptance(result)


def _acceptance(result: Any) -> dict[str, Any]:
    """The declared tests' verdict (issue 28): ``declared acceptance: 1/1 fail-to-pass passed``."""
    judged = result.acceptance
    if judged is None:
        return {}
    return {"acceptance": judged.line(), "accepted": judged.accepted}


def _what_failed(result: Any) -> dict[str, Any]:
    """An environment failure's own cause, from its digest ("What failed: No module named 'x'")."""
    if result.result.value != "env_failure":
        return {}
    lines = [ln.strip() for ln in str(result.last_digest).splitlines() if ln.strip()]
    line = next((ln for ln in lines if ln.startswith("What failed:")), lines[0] if lines else "")
    return {"what_failed": line.removeprefix("What failed:").strip()[:300]} if line else {}


def _invalid(result: Any) -> dict[str, Any]:
    """A task already green at baseline: no agent was called, nothing was verified (not solved)."""
    if result.result.value != "success" or result.iterations != 0:
        return {}
    return {
        "result": "invalid",
        "reason": "already green at baseline: nothing for the agent to fix",
    }


def _setup_failed(exit_code: int, output: str, initial: str) -> dict[str, Any]:
    last = next((ln for ln in reversed(output.strip().splitlines()) if ln.strip()), "")
    return {
        "result": "env_failure",
        "reason": f"setup failed (exit {exit_code})" + (f": {last[:200]}" if last else ""),
        "iterations": 0,
        "initial_sha": initial,
        "final_sha": initial,
    }


def _read_record(path: Path) -> dict[str, bytes]:
    if not path.is_dir():
        return {}
    return {
        str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()
    }


def _outcome(
    job: Job, row: dict[str, Any], dest: Path, start: float, record: dict[str, bytes]
) -> Outcome:
    full = {
        "id": job.task.id,
        **row,
        "wall_s": round(time.monotonic() - start, 3),
        "workspace": str(dest),
        "node": socket.gethostname(),
        "executor": job.executor,
        "attempt": job.attempt,
        "line": job.task.line,
        "task_fingerprint": job.task.fingerprint,
    }
    return Outcome(row=full, record=record)


def error_outcome(job: Job, reason: str) -> Outcome:
    """The row of a task that produced no outcome of its own (its worker died, or raised)."""
    row = {"id": job.task.id, "result": "error", "reason": reason, "iterations": 0}
    row |= {"attempt": job.attempt, "executor": job.executor, "line": job.task.line}
    return Outcome(row={**row, "task_fingerprint": job.task.fingerprint})


# -- the local pool's process entry point -------------------------------------------------------


def job_to_json(job: Job) -> str:
    data = asdict(job)
    data["task"] = {
        **job.task.to_json(),
        "line": job.task.line,
        "fingerprint": job.task.fingerprint,
    }
    data["task"]["repo"] = job.task.repo
    data["overrides"] = [list(kv) for kv in job.overrides]
    return json.dumps(data)


def job_from_json(text: str) -> Job:
    data = json.loads(text)
    raw = data.pop("task")
    verifier = raw.get("verifier")
    raw["verifier"] = tuple(verifier) if isinstance(verifier, list) else verifier
    for key in ("fail_to_pass", "pass_to_pass"):
        raw[key] = tuple(raw.get(key, ()))
    data["overrides"] = tuple(tuple(kv) for kv in data["overrides"])
    return Job(task=Task(**raw), **data)


def write_stage(stage: Path, outcome: Outcome) -> None:
    """The pool process's hand-over: ``record/`` then ``outcome.json`` (written last, atomically)."""
    for rel, blob in outcome.record.items():
        target = stage / "record" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(blob)
    tmp = stage / "outcome.json.tmp"
    tmp.write_text(json.dumps(outcome.row, default=str), encoding="utf-8")
    os.replace(tmp, stage / "outcome.json")


@contextmanager
def _interrupt_when_orphaned() -> Iterator[None]:
    """SIGTERM (the driver's Ctrl-C) and the driver's death both end the loop as interrupted."""
    parent = os.getppid()

    def on_term(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os.kill(os.getpid(), signal.SIGTERM)

    old = signal.signal(signal.SIGTERM, on_term)
    threading.Thread(target=watch, daemon=True).start()
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def main(argv: list[str]) -> int:
    from greenloop.processes import orphans

    orphans.own_process()  # a worker process of greenloop's own, as the command line is
    stage = Path(argv[0])
    job = job_from_json((stage / "job.json").read_text(encoding="utf-8"))
    slots = (
        FileSlots(directory=job.slots_dir, count=job.max_parallel_agents)
        if job.max_parallel_agents
        else None
    )
    with _interrupt_when_orphaned():
        outcome = run_task(job, slots=slots, phase=lambda p: _write_phase(stage, p))
    write_stage(stage, outcome)
    return 0


def _write_phase(stage: Path, phase: str) -> None:
    tmp = stage / "phase.tmp"
    tmp.write_text(phase, encoding="utf-8")
    os.replace(tmp, stage / "phase")


def read_phase(stage: Path) -> str:
    try:
        return (stage / "phase").read_text(encoding="utf-8")
    except OSError:
        return ""


def read_stage(stage: Path) -> Outcome | None:
    try:
        row: Mapping[str, Any] = json.loads((stage / "outcome.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return Outcome(row=dict(row))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""A pool of ``--workers`` processes, each task in its own process group and session.

Ctrl-C: every running task gets SIGTERM, ends as ``interrupted`` with its attempt kept, and its row
is written; a worker that dies without an outcome is retried once, then recorded as ``error``.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from greenloop.batch.executors import Deliver, MayStart, Started
from greenloop.batch.worker import Job, error_outcome, job_to_json, read_stage

POLL_S = 0.05
_launches = itertools.count(1)


@dataclass(frozen=True, slots=True, kw_only=True)
class Running:
    job: Job
    proc: subprocess.Popen[bytes]
    stage: Path


def run_local(
    jobs: Sequence[Job],
    *,
    workers: int,
    state_dir: Path,
    deliver: Deliver,
    started: Started,
    may_start: MayStart = lambda: True,
) -> bool:
    """Run every job (while ``may_start`` allows); return True when interrupted by Ctrl-C."""
    pending = deque(jobs)
    running: list[Running] = []
    try:
        while running or (pending and may_start()):
            while pending and len(running) < workers and may_start():
                item = _launch(pending.popleft(), state_dir)
                running.append(item)
                started(item.job, item.stage)
            time.sleep(POLL_S)
            for item in [r for r in running if r.proc.poll() is not None]:
                running.remove(item)
                retry = _collect(item, deliver)
                if retry is not None:
                    pending.appendleft(retry)
    except KeyboardInterrupt:
        _interrupt(running, deliver)
        return True
    return False


def _launch(job: Job, state_dir: Path) -> Running:
    stage = state_dir / f"{job.task.id}.{os.getpid()}-{next(_launches)}"
    stage.mkdir(parents=True)
    (stage / "job.json").write_text(job_to_json(job), encoding="utf-8")
    with (stage / "worker.log").open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "greenloop.batch.worker", str(stage)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: a terminal's Ctrl-C is ours to pass
        )
    return Running(job=job, proc=proc, stage=stage)


def _collect(item: Running, deliver: Deliver) -> Job | None:
    """Deliver the outcome; a worker that died without one is retried once, then an error."""
    outcome = read_stage(item.stage)
    if outcome is not None:
        deliver(outcome, item.stage / "record")
        return None
    died = f"the worker process died (exit {item.proc.returncode})"
    if item.job.attempt < 2:
        return replace(item.job, attempt=item.job.attempt + 1)
    deliver(error_outcome(item.job, f"{died}, twice"), None)
    return None


def _interrupt(running: list[Running], deliver: Deliver) -> None:
    for item in running:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(item.proc.pid, signal.SIGTERM)
    for item in running:
        while True:
            try:
                item.proc.wait()
                break
            except KeyboardInterrupt:  # a second Ctrl-C: still wait, the attempt must be kept
                continue
        outcome = read_stage(item.stage)
        if outcome is not None:
            deliver(outcome, item.stage / "record")

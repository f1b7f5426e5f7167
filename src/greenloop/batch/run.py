"""``run_batch``: tasks -> plan (resume) -> jobs -> an executor -> results.jsonl + summary.json."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from greenloop.batch import results, workspace
from greenloop.batch.checks import check_tasks, load_checked_tasks
from greenloop.batch.progress import Progress, make_progress
from greenloop.batch.tasks import Task, raise_problems
from greenloop.batch.worker import Job, Outcome
from greenloop.errors import FatalError

EXECUTORS = ("local", "ray")


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchResult:
    out: Path
    total: int
    ran: tuple[dict[str, Any], ...]
    """The rows written by this run, in the order the tasks finished."""
    skipped: tuple[str, ...]
    changed: tuple[str, ...]
    summary: dict[str, Any]
    interrupted: bool

    @property
    def exit_code(self) -> int:
        """0 every task succeeded, 1 any did not, 130 interrupted."""
        if self.interrupted:
            return 130
        latest = self.summary.get("by_result", {})
        return 0 if latest.get("success", 0) == self.total else 1


def default_workers() -> int:
    return max(1, (os.cpu_count() or 2) // 2)


def run_batch(
    tasks: Sequence[Task] | Path | str,
    *,
    out: Path | str,
    agent: str | None = None,
    executor: str = "local",
    workers: int | None = None,
    ray_address: str | None = None,
    cpus_per_task: float = 1.0,
    max_parallel_agents: int = 0,
    redo: bool = False,
    redo_failed: bool = False,
    overrides: Mapping[str, Any] | None = None,
    progress: Progress | None = None,
    max_cost: float | None = None,
    max_tokens: int | None = None,
) -> BatchResult:
    """Run every task of TASKS (a path or parsed tasks) and return the aggregate (library API).

    ``max_cost`` / ``max_tokens``: the whole batch's budget (every row's reported spend, earlier
    runs' included); once it is reached no new task starts, and the running ones finish."""
    _check_executor(executor)
    task_list = _checked(tasks, agent)
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    with _driver_lock(out):
        rows = results.read_rows(out)
        options = _options_fingerprint(agent, overrides or {})
        plan = results.plan_run(
            task_list, rows, redo=redo, redo_failed=redo_failed, options=options
        )
        jobs = _jobs(plan.todo, out, agent, overrides or {}, max_parallel_agents, executor)
        show = _progress(progress, task_list, plan, rows)
        for line in _found(plan, out):
            show.note(line)
        ran: list[dict[str, Any]] = []
        purse = BatchBudget(max_cost=max_cost, max_tokens=max_tokens, rows=rows)

        def deliver(outcome: Outcome, record_dir: Path | None) -> None:
            row = _store(out, outcome, record_dir) | {"options_fingerprint": options}
            results.append_row(out, row)
            ran.append(row)
            purse.add(row)
            show.finished(row)

        with show:
            interrupted = _execute(
                executor, jobs, out, deliver, show, workers or default_workers(),
                ray_address, cpus_per_task, max_parallel_agents, purse,
            )  # fmt: skip
        summary = _write_summary(out, task_list, purse, not_started=len(jobs) - len(ran))
    return BatchResult(
        out=out,
        total=len(task_list),
        ran=tuple(ran),
        skipped=plan.done,
        changed=plan.changed,
        summary=summary,
        interrupted=interrupted,
    )


def _check_executor(executor: str) -> None:
    if executor not in EXECUTORS:
        raise FatalError(f"unknown executor {executor!r}: expected one of {', '.join(EXECUTORS)}")


def _progress(
    given: Progress | None,
    task_list: Sequence[Task],
    plan: results.Plan,
    rows: Sequence[dict[str, Any]],
) -> Progress:
    """The caller's progress, or the batch's display counting the tasks an earlier run finished
    (and solved)."""
    latest = results.latest_by_id(r for r in rows if r.get("result") not in results.RESUMABLE)
    solved = sum(latest[i].get("result") == "success" for i in plan.done)
    return given or make_progress(total=len(task_list), done=len(plan.done), solved=solved)


def _write_summary(
    out: Path, task_list: Sequence[Task], purse: BatchBudget, *, not_started: int
) -> dict[str, Any]:
    """summary.json from every row in results.jsonl; a budget that stopped the batch says so."""
    summary = results.summarize(task_list, results.read_rows(out))
    if purse.stopped:
        summary["budget"] = purse.report(not_started=not_started)
    results.write_summary(out, summary)
    return summary


def _options_fingerprint(agent: str | None, overrides: Mapping[str, Any]) -> str:
    """The default agent and the run flags a task ran with: a rerun with others is reported."""
    given = sorted((k, v) for k, v in overrides.items() if v is not None)
    text = json.dumps([agent, given], default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _found(plan: results.Plan, out: Path) -> list[str]:
    """What a resumed batch found (one line), then each finished task whose line or options changed."""
    found = plan.found()
    if found:
        aside = sum((out / "work" / t.id).exists() for t in plan.todo)
        found += (
            f"; {aside} earlier workspace(s) to move aside under {out / 'aside'}" if aside else ""
        )
        found += " (--redo runs every task again, --redo-failed the unsolved ones)"
    return [found, *plan.changed] if found else list(plan.changed)


def _checked(tasks: Sequence[Task] | Path | str, agent: str | None) -> tuple[Task, ...]:
    """Every check that needs no clone, before anything starts (FatalError: exit 2)."""
    if isinstance(tasks, str | Path):
        return load_checked_tasks(Path(tasks), agent=agent)
    raise_problems(check_tasks(tasks, agent=agent))
    return tuple(tasks)


def _jobs(
    todo: Sequence[Task],
    out: Path,
    agent: str | None,
    overrides: Mapping[str, Any],
    max_parallel_agents: int,
    executor: str,
) -> list[Job]:
    given = tuple((k, v) for k, v in overrides.items() if v is not None)
    return [
        Job(
            task=task,
            agent=agent,
            overrides=given,
            work_root=str(out / "work"),
            aside_root=str(out / "aside" / "work"),
            slots_dir=str(out / "state" / "agent-slots"),
            max_parallel_agents=max_parallel_agents,
            executor=executor,
        )
        for task in todo
    ]


def _execute(
    executor: str,
    jobs: list[Job],
    out: Path,
    deliver: Any,
    show: Progress,
    workers: int,
    ray_address: str | None,
    cpus_per_task: float,
    max_parallel_agents: int,
    purse: BatchBudget,
) -> bool:
    if not jobs:
        return False
    may_start = purse.may_start if purse.capped else None
    if executor == "ray":
        from greenloop.batch.executors.ray import run_ray

        return run_ray(
            jobs,
            address=ray_address,
            workers=workers,
            cpus_per_task=cpus_per_task,
            max_parallel_agents=max_parallel_agents,
            state_dir=out / "state",
            deliver=deliver,
            started=show.started,
            phases=show.phases,
            may_start=may_start,
        )
    from greenloop.batch.executors.local import run_local

    return run_local(
        jobs,
        workers=workers,
        state_dir=out / "state",
        deliver=deliver,
        started=show.started,
        may_start=may_start or (lambda: True),
    )


@dataclass(slots=True, kw_only=True)
class BatchBudget:
    """The batch-wide cap on what its tasks' agents spend (as each task's row reports it)."""

    max_cost: float | None
    max_tokens: int | None
    rows: Sequence[Mapping[str, Any]] = ()
    cost: float = 0.0
    tokens: int = 0
    stopped: bool = False

    def __post_init__(self) -> None:
        for row in self.rows:  # what earlier runs of this batch spent counts too
            self.add(row)

    @property
    def capped(self) -> bool:
        return self.max_cost is not None or self.max_tokens is not None

    def add(self, row: Mapping[str, Any]) -> None:
        self.cost += float(row.get("cost_usd") or 0.0)
        self.tokens += int(row.get("prompt_tokens") or 0) + int(row.get("completion_tokens") or 0)

    def may_start(self) -> bool:
        over = (self.max_cost is not None and self.cost >= self.max_cost) or (
            self.max_tokens is not None and self.tokens >= self.max_tokens
        )
        self.stopped = self.stopped or over
        return not over

    def report(self, *, not_started: int) -> dict[str, Any]:
        return {
            "max_cost_usd": self.max_cost,
            "max_tokens": self.max_tokens,
            "spent_usd": round(self.cost, 6),
            "spent_tokens": self.tokens,
            "not_started": not_started,
        }


def _store(out: Path, outcome: Outcome, record_dir: Path | None) -> dict[str, Any]:
    """Put the task's run record under ``DIR/records/<id>/`` (an older one is set aside)."""
    row = dict(outcome.row)
    target = out / "records" / str(row["id"])
    workspace.set_aside(target, out / "aside" / "records")
    if record_dir is not None and record_dir.is_dir():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(record_dir, target)
    elif outcome.record:
        for rel, blob in outcome.record.items():
            path = target / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(blob)
    row["record"] = str(target) if target.is_dir() else ""
    return row


@contextmanager
def _driver_lock(out: Path) -> Iterator[None]:
    """One driver per DIR; the kernel frees the lock when a killed driver's process ends."""
    fd = os.open(out / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise FatalError(f"another greenloop batch is running on {out}") from None
        yield
    finally:
        os.close(fd)

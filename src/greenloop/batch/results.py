"""``DIR/results.jsonl`` (append-only, fsync'd per finished task), resume, ``DIR/summary.json``."""

from __future__ import annotations

import json
import os
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from greenloop.batch.tasks import Task

RESULTS = "results.jsonl"
SUMMARY = "summary.json"
# A row with this result is kept (nothing lost) but does not count as finished: a rerun resumes it.
# "error": the task never got its loop (no agent, a bad config, a worker that died).
RESUMABLE = frozenset({"interrupted", "error"})
# Already green at baseline: the task verifies nothing an agent did, so it is out of the solve rate.
INVALID = "invalid"


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """What a (re)run of the batch does with each task."""

    todo: tuple[Task, ...]
    done: tuple[str, ...]
    changed: tuple[str, ...]
    """One line per finished id whose TASKS line or options changed since it ran (skipped)."""
    again: tuple[str, ...] = ()
    """Ids to run again: their last row was an error or an interruption (or a failure, with
    ``--redo-failed``)."""

    def found(self) -> str:
        """What a resumed batch found, in one line; empty for a batch that starts afresh."""
        if not self.done and not self.again:
            return ""
        fresh = len(self.todo) - len(self.again)
        parts = [f"{len(self.done)} finished (skipped)", f"{len(self.again)} to run again"]
        parts += [f"{fresh} not started yet"] if fresh else []
        return "resuming: " + ", ".join(parts)


def read_rows(out: Path) -> list[dict[str, Any]]:
    """Every row; a line torn by a kill -9 mid-write is ignored."""
    try:
        lines = (out / RESULTS).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    rows = []
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and "id" in row:
            rows.append(row)
    return rows


def append_row(out: Path, row: Mapping[str, Any]) -> None:
    """Append one JSON line and fsync it before returning."""
    path = out / RESULTS
    line = json.dumps(dict(row), default=str, ensure_ascii=False) + "\n"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":  # a torn line: start on a fresh one
            line = "\n" + line
        os.write(fd, line.encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def latest_by_id(rows: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    latest: dict[str, Mapping[str, Any]] = {}
    for row in rows:
        latest[str(row["id"])] = row
    return latest


def plan_run(
    tasks: Sequence[Task],
    rows: Sequence[Mapping[str, Any]],
    *,
    redo: bool,
    redo_failed: bool = False,
    options: str = "",
) -> Plan:
    """``options``: the fingerprint of this run's agent and flags, to report a finished task's."""
    latest = latest_by_id(r for r in rows if r.get("result") not in RESUMABLE)
    tried = {str(r["id"]) for r in rows}
    todo, done, changed, again = [], [], [], []
    for task in tasks:
        row = latest.get(task.id)
        failed = row is not None and row.get("result") not in ("success", INVALID)
        if row is None or redo or (redo_failed and failed):
            todo.append(task)
            again += [task.id] if task.id in tried else []
            continue
        done.append(task.id)
        changed += _changed(task, row, options)
    return Plan(todo=tuple(todo), done=tuple(done), changed=tuple(changed), again=tuple(again))


def _changed(task: Task, row: Mapping[str, Any], options: str) -> list[str]:
    if row.get("task_fingerprint") != task.fingerprint:
        what = "changed"
    elif options and row.get("options_fingerprint") not in (None, options):
        what = "is run with another agent or other options"
    else:
        return []
    return [
        f"{task.id} (line {task.line}) {what} since it finished as {row.get('result')}; "
        "skipped: pass --redo to run it again"
    ]


def summarize(tasks: Sequence[Task], rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The aggregate of the latest row of each task of this TASKS file."""
    ids = {t.id for t in tasks}
    latest = [r for i, r in latest_by_id(rows).items() if i in ids]
    by_result = Counter(str(r.get("result")) for r in latest)
    solved = by_result.get("success", 0)
    valid = len(tasks) - by_result.get(INVALID, 0)
    return {
        "total": len(tasks),
        "finished": sum(1 for r in latest if r.get("result") not in RESUMABLE),
        "solved": solved,
        "invalid": by_result.get(INVALID, 0),
        "invalid_reasons": _invalid_reasons(latest),
        "valid": valid,
        "solve_rate": round(solved / valid, 4) if valid else 0.0,
        "declared": _declared(latest),
        "by_result": dict(sorted(by_result.items())),
        "by_reason": _by_reason(latest),
        "median": {
            k: median_of(latest, k) for k in ("wall_s", "agent_s", "verifier_s", "iterations")
        },
        "cost_usd": round(sum(float(r.get("cost_usd") or 0.0) for r in latest), 6),
        "agent_retry_wait_s": round(
            sum(float(r.get("agent_retry_wait_s") or 0) for r in latest), 3
        ),
        "slowest": top_by(latest, "wall_s"),
        "costliest": top_by(latest, "cost_usd"),
        "tasks": [dict(r) for r in sorted(latest, key=lambda r: str(r["id"]))],
    }


def _invalid_reasons(rows: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Why tasks are invalid: already green at baseline, or a declaration the suite contradicts."""
    kinds = Counter(
        "already green at baseline"
        if str(r.get("reason", "")).startswith("already green")
        else "a wrong declaration"
        for r in rows
        if r.get("result") == INVALID
    )
    return dict(sorted(kinds.items()))


def _declared(rows: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Tasks with declared tests (issue 28), and those whose declaration the last run met."""
    judged = [r for r in rows if "accepted" in r]
    return {"tasks": len(judged), "accepted": sum(bool(r["accepted"]) for r in judged)}


def write_summary(out: Path, summary: Mapping[str, Any]) -> Path:
    path = out / SUMMARY
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(dict(summary), indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def _by_reason(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    counts = Counter((str(r.get("result")), str(r.get("reason", ""))) for r in rows)
    return [
        {"result": result, "reason": reason, "count": n}
        for (result, reason), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    ]


def median_of(rows: Sequence[Mapping[str, Any]], key: str) -> float | None:
    values = [float(r[key]) for r in rows if isinstance(r.get(key), int | float)]
    return round(statistics.median(values), 3) if values else None


def top_by(rows: Sequence[Mapping[str, Any]], key: str, n: int = 5) -> list[dict[str, Any]]:
    ranked = sorted(
        (r for r in rows if isinstance(r.get(key), int | float) and r[key]),
        key=lambda r: -float(r[key]),
    )
    return [{"id": r["id"], key: r[key], "result": r.get("result")} for r in ranked[:n]]

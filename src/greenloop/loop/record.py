"""The run record: ``<git common dir>/greenloop/runs/<run-id>/``, never in the work tree.

``events.jsonl`` is append-only and fsync'd per event, so a kill -9 loses at most the event being
written; ``report.json`` is replaced atomically; every file is redacted and capped.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from greenloop import git
from greenloop.errors import FatalError
from greenloop.redact import redact, redact_data

FILE_CAP_BYTES = 1 << 20
# Of a capped file keep this much of the head; the rest of the cap goes to the tail (where
# verifier logs put their summary).
HEAD_SHARE = 256 * 1024
EVENTS = "events.jsonl"
REPORT = "report.json"


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRecord:
    """One run's directory of records."""

    path: Path
    run_id: str

    @classmethod
    def create(cls, common_dir: Path, run_id: str) -> RunRecord:
        path = runs_dir(common_dir) / run_id
        path.mkdir(parents=True, exist_ok=True)
        return cls(path=path, run_id=run_id)

    def event(self, kind: str, **data: Any) -> None:
        """Append one JSON line (with ``t``, epoch seconds), flushed and fsync'd."""
        line = json.dumps(
            {"t": round(time.time(), 3), "kind": kind, **redact_data(data)},
            default=str,
            ensure_ascii=False,
        )
        fd = os.open(self.path / EVENTS, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, (line + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)

    def write(self, relpath: str, text: str) -> Path:
        """Write one record file (e.g. ``iter-1/verify.log``), redacted and capped at 1 MiB."""
        target = self.path / _safe_relpath(relpath)
        target.parent.mkdir(parents=True, exist_ok=True)
        _write_atomic(target, cap_text(redact(text)).encode())
        return target

    def write_report(self, data: Mapping[str, Any]) -> Path:
        """Replace ``report.json`` atomically: readers see the old or the new, never half."""
        target = self.path / REPORT
        text = json.dumps(redact_data(dict(data)), indent=2, default=str, ensure_ascii=False)
        _write_atomic(target, (text + "\n").encode())
        return target


def _safe_relpath(relpath: str) -> str:
    parts = PurePosixPath(relpath).parts
    if not parts or relpath.startswith("/") or any(p in ("..", "") for p in parts):
        raise ValueError(f"record path must stay inside the run directory: {relpath!r}")
    return str(PurePosixPath(*parts))


def cap_text(text: str, cap: int = FILE_CAP_BYTES) -> str:
    """At most ``cap`` bytes of UTF-8: the head and the tail, with a marker between."""
    data = text.encode()
    if len(data) <= cap:
        return text
    head, tail = data[:HEAD_SHARE], data[len(data) - (cap - HEAD_SHARE - 100) :]
    omitted = len(data) - len(head) - len(tail)
    marker = f"\n[... {omitted} bytes omitted by greenloop ...]\n".encode()
    return (head + marker + tail).decode("utf-8", errors="ignore")


def _write_atomic(target: Path, data: bytes) -> None:
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, target)


# ---------------------------------------------------------------- reading records


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSummary:
    run_id: str
    result: str | None
    """From report.json; None when the run wrote no report (killed before its first one)."""
    started: str
    """Local time the run started (``YYYY-MM-DD HH:MM:SS``), or ``""`` when unknown."""
    iterations: int | None
    path: Path


def common_dir_of(cwd: Path) -> Path:
    root = git.get_root(cwd)
    if root is None:
        raise FatalError(f"{cwd} is not inside a git work tree; greenloop keeps its runs in git")
    return git.common_dir(root)


def runs_dir(common_dir: Path) -> Path:
    return common_dir / "greenloop" / "runs"


def list_runs(common_dir: Path) -> list[RunSummary]:
    """Every recorded run, newest first."""
    base = runs_dir(common_dir)
    if not base.is_dir():
        return []
    dirs = [d for d in base.iterdir() if d.is_dir()]
    dirs.sort(key=lambda d: (_started_at(d) or 0.0, d.name), reverse=True)
    return [_summary(d) for d in dirs]


def _summary(directory: Path) -> RunSummary:
    report = read_json(directory / REPORT)
    started = _started_at(directory)
    iterations = report.get("iterations") if report else None
    return RunSummary(
        run_id=directory.name,
        result=str(report["result"]) if report and report.get("result") else None,
        started=time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)) if started else "",
        iterations=iterations if isinstance(iterations, int) else None,
        path=directory,
    )


def _started_at(directory: Path) -> float | None:
    """The first event's time, else the run id's timestamp."""
    with (
        contextlib.suppress(OSError, ValueError, KeyError, TypeError),
        open(directory / EVENTS, encoding="utf-8") as handle,
    ):
        return float(json.loads(handle.readline())["t"])
    with contextlib.suppress(ValueError):
        return time.mktime(time.strptime(directory.name[:15], "%Y%m%d-%H%M%S"))
    return None


def read_events(directory: Path) -> list[dict[str, Any]]:
    """The run's events, oldest first; a line a kill cut short is skipped."""
    try:
        lines = (directory / EVENTS).read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    events = []
    for line in lines:
        with contextlib.suppress(ValueError):
            event = json.loads(line)
            if isinstance(event, dict):
                events.append(event)
    return events


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def load_report(common_dir: Path, run_id: str = "last") -> dict[str, Any]:
    """A run's report.json: ``last`` is the newest run with a report; a unique prefix will do."""
    runs = [r for r in list_runs(common_dir) if (r.path / REPORT).is_file()]
    if not runs:
        raise FatalError("no greenloop run with a report in this repository yet")
    if run_id == "last":
        matches = runs[:1]
    else:
        matches = [r for r in runs if r.run_id == run_id] or [
            r for r in runs if r.run_id.startswith(run_id)
        ]
    if len(matches) != 1:
        problem = "matches several runs" if matches else "is not a run with a report"
        raise FatalError(f"{run_id!r} {problem}; see `greenloop runs`")
    report = read_json(matches[0].path / REPORT)
    if report is None:
        raise FatalError(f"the report of run {matches[0].run_id} is unreadable: {matches[0].path}")
    return report


def main_runs(args: argparse.Namespace) -> int:
    runs = list_runs(common_dir_of(Path(args.repo).resolve()))
    if getattr(args, "format", "text") == "json":
        rows = [_summary_json(r) for r in runs]
        print(json.dumps(rows, indent=2))
        return 0
    if not runs:
        print("no greenloop runs recorded in this repository")
        return 0
    from greenloop.loop import runlock

    lock = runlock.read_lock(common_dir_of(Path(args.repo).resolve()))
    print(f"{'RUN':<22} {'RESULT':<34} {'ITERS':>5}  STARTED")
    for run in runs:
        iters = "-" if run.iterations is None else str(run.iterations)
        print(f"{run.run_id:<22} {_result_label(run, lock):<34} {iters:>5}  {run.started}")
    return 0


def _result_label(run: RunSummary, lock: Any) -> str:
    """A run that never wrote its finish event was killed (kill -9, power loss): only it needs
    ``greenloop recover``; a Ctrl-C'd run finished cleanly as ``interrupted``."""
    report = read_json(run.path / REPORT)
    if report is not None and report.get("recovered"):
        return "killed (recovered)"
    if finished(run.path) or (report is not None and report.get("reason") != "in progress"):
        return run.result or "(no report)"
    if lock is not None and lock.run_id == run.run_id:
        from greenloop.loop import runlock

        if runlock.lock_is_live(lock):
            return "running"
        return "KILLED: run greenloop recover"
    return "killed (recovered)"


def finished(directory: Path) -> bool:
    """Whether the run wrote its ``finish`` event."""
    try:
        lines = (directory / EVENTS).read_text(encoding="utf-8").splitlines()
    except OSError:
        return False
    return any('"kind": "finish"' in line for line in lines[-3:])


def _summary_json(run: RunSummary) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "result": run.result,
        "iterations": run.iterations,
        "started": run.started,
        "path": str(run.path),
    }

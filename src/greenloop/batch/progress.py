"""Progress: a live table on a terminal (rich, imported only then), one line per task otherwise."""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TextIO

from greenloop.batch.worker import Job, read_phase


class Progress(Protocol):
    def __enter__(self) -> Progress: ...
    def __exit__(self, *exc: object) -> None: ...
    def started(self, job: Job, stage: Path | None) -> None: ...
    def finished(self, row: Mapping[str, Any]) -> None: ...
    def note(self, line: str) -> None: ...
    def phases(self, phases: Mapping[str, str]) -> None: ...


def make_progress(
    *, total: int, done: int, solved: int = 0, stream: TextIO = sys.stderr
) -> Progress:
    """``done``/``solved``: tasks finished (and solved) by an earlier run of the same batch."""
    counts = Counts(total=total, done=done, solved=solved)
    if stream.isatty():
        return LiveProgress(counts=counts, stream=stream)
    return LineProgress(counts=counts, stream=stream)


@dataclass(slots=True, kw_only=True)
class Counts:
    total: int
    done: int
    solved: int = 0
    started_at: float = field(default_factory=time.monotonic)
    finished_here: int = 0
    running: dict[str, tuple[float, Path | None]] = field(default_factory=dict)
    told: dict[str, str] = field(default_factory=dict)
    """Phases the executor reported (Ray); a pool process writes its own into its stage folder."""

    def start(self, job: Job, stage: Path | None) -> None:
        self.running[job.task.id] = (time.monotonic(), stage)
        self.told.pop(job.task.id, None)

    def tell(self, phases: Mapping[str, str]) -> None:
        self.told.update((k, v) for k, v in phases.items() if k in self.running)

    def phase_of(self, task_id: str) -> str:
        stage = self.running[task_id][1]
        return self.told.get(task_id) or (read_phase(stage) if stage else "") or "running"

    def finish(self, row: Mapping[str, Any]) -> None:
        self.running.pop(str(row["id"]), None)
        self.told.pop(str(row["id"]), None)
        if row.get("result") == "interrupted":
            return
        self.done += 1
        self.finished_here += 1
        self.solved += row.get("result") == "success"

    def eta_s(self) -> float | None:
        if not self.finished_here:
            return None
        per_task = (time.monotonic() - self.started_at) / self.finished_here
        return per_task * (self.total - self.done)

    def line(self, row: Mapping[str, Any]) -> str:
        eta = self.eta_s()
        tail = f" · ETA {eta:.0f} s" if eta is not None and self.done < self.total else ""
        waited = float(row.get("agent_retry_wait_s") or 0)
        tail = (f" · agent waited {waited:.1f} s on 429/5xx" if waited else "") + tail
        return (
            f"[{self.done}/{self.total}] {row['id']}: {row.get('result')} · {row.get('reason', '')}"
            f" · {float(row.get('wall_s') or 0):.1f} s · {self.solved} solved{tail}"
        )


@dataclass(slots=True, kw_only=True)
class LineProgress:
    counts: Counts
    stream: TextIO

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def started(self, job: Job, stage: Path | None) -> None:
        self.counts.start(job, stage)

    def phases(self, phases: Mapping[str, str]) -> None:
        self.counts.tell(phases)

    def finished(self, row: Mapping[str, Any]) -> None:
        self.counts.finish(row)
        print(self.counts.line(row), file=self.stream, flush=True)

    def note(self, line: str) -> None:
        print(f"greenloop batch: {line}", file=self.stream, flush=True)


@dataclass(slots=True, kw_only=True)
class LiveProgress:
    """done/total, solved so far, the running tasks and for how long, the ETA."""

    counts: Counts
    stream: TextIO
    live: Any = None

    def __enter__(self) -> LiveProgress:
        from rich.console import Console
        from rich.live import Live

        console = Console(file=self.stream)
        self.live = Live(get_renderable=self.table, console=console, refresh_per_second=4)
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.__exit__(None, None, None)

    def started(self, job: Job, stage: Path | None) -> None:
        self.counts.start(job, stage)

    def phases(self, phases: Mapping[str, str]) -> None:
        self.counts.tell(phases)

    def finished(self, row: Mapping[str, Any]) -> None:
        self.counts.finish(row)
        self.live.console.print(self.counts.line(row), markup=False, highlight=False)

    def note(self, line: str) -> None:
        print(f"greenloop batch: {line}", file=self.stream, flush=True)

    def table(self) -> Any:
        """The live table (a rich ``Table``): what runs, in which phase, for how long."""
        from rich.table import Table

        c = self.counts
        eta = c.eta_s()
        title = f"{c.done}/{c.total} done · {c.solved} solved" + (
            f" · ETA {eta:.0f} s" if eta is not None else ""
        )
        table = Table(title=title, title_justify="left", show_edge=False)
        table.add_column("running")
        table.add_column("phase")
        table.add_column("for", justify="right")
        now = time.monotonic()
        for task_id, (since, _) in sorted(c.running.items(), key=lambda kv: kv[1][0]):
            table.add_row(task_id, c.phase_of(task_id), f"{now - since:.0f} s")
        return table

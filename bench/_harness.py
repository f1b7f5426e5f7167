"""Shared helpers for the benchmarks: time a callable N times, summarize, print a markdown row.

Benchmarks are measurements, never tests: nothing here asserts; each script prints its figures and
a PASS/FAIL against the issue's goal.
"""

from __future__ import annotations

import datetime
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
GREENLOOP = str(Path(PYTHON).with_name("greenloop"))


@dataclass(frozen=True, slots=True)
class Timing:
    samples: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def spread(self) -> str:
        """min-max, the honest spread for a handful of runs."""
        return f"{min(self.samples) * 1000:.1f}-{max(self.samples) * 1000:.1f} ms"


def time_call(fn: Callable[[], object], *, runs: int, warmup: int = 1) -> Timing:
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return Timing(tuple(samples))


def time_command(
    argv: Sequence[str],
    *,
    runs: int,
    warmup: int = 2,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> tuple[Timing, Timing]:
    """(wall, cpu) per run; CPU = user + sys of the child tree, steadier on a loaded machine."""

    def once() -> None:
        subprocess.run(
            argv,
            cwd=cwd,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )

    for _ in range(warmup):
        once()
    wall, cpu = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        once()
        wall.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return Timing(tuple(wall)), Timing(tuple(cpu))


def load() -> str:
    return "load avg {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())


def machine() -> str:
    return f"{os.cpu_count()} cores, {platform.system()} {platform.machine()}, Python {platform.python_version()}"


def today() -> str:
    return datetime.date.today().isoformat()


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def row(*cells: object) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


HEADER = (
    row("benchmark", "figure measured", "goal", "result", "date", "machine")
    + "\n"
    + row(*["---"] * 6)
)


def cached_env() -> dict[str, str]:
    """Bytecode caching on, into a prefix outside the work tree: what an installed user gets.

    (This sandbox sets PYTHONDONTWRITEBYTECODE=1, which recompiles greenloop's modules on every start.)
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = "/tmp/glbench-pycache"
    return env

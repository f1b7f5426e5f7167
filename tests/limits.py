"""Time limits in tests bound hangs, never speed (issue 37): each is scaled by how busy this
machine is when the test process starts, so a suite beside a CPU-bound job still passes.

``hang(120)`` is 120 s on a quiet machine, up to ten times that on a loaded one. The factor is the
larger of the load average per core and the wall/CPU ratio of a short busy loop (how much of a
core this process gets); speed itself is measured in ``bench/``, not here."""

from __future__ import annotations

import functools
import os
import time

MAX_FACTOR = 10.0


@functools.cache
def busy_factor() -> float:
    """How much slower than a quiet machine wall-clock time runs here now (1.0 to MAX_FACTOR),
    measured once per test process."""
    return min(MAX_FACTOR, max(1.0, _share_of_a_core(), _load_per_core()))


def hang(seconds: float) -> float:
    """A hang guard of ``seconds`` on a quiet machine, scaled by :func:`busy_factor`."""
    return seconds * busy_factor()


def _share_of_a_core() -> float:
    wall, cpu = time.perf_counter(), time.process_time()
    total = 0
    for i in range(300_000):  # ~20 ms of CPU
        total += i
    spent = time.process_time() - cpu
    return (time.perf_counter() - wall) / spent if spent > 0 else 1.0


def _load_per_core() -> float:
    try:
        return os.getloadavg()[0] / (os.cpu_count() or 1)
    except OSError:
        return 1.0

"""What stopping escaped processes costs a command (orphans.py): nothing left, and one daemon.

    python bench/escapes.py [--runs 200]

Interleaves ``run_command(("true",))`` with and without ``stop_escaped``; times the sweep alone
when nothing escaped; and times a stage whose daemon (fork, setsid, fork) is stopped after it.
Prints the details and one markdown row.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from greenloop.processes import orphans
from greenloop.processes.process import run_command

ESCAPE = Path(__file__).resolve().parent.parent / "tests" / "resources" / "escape.py"


def per_command(runs: int) -> tuple[float, float]:
    """Median wall ms of a ``true`` command, with and without the sweep, interleaved."""
    on, off = [], []
    for _ in range(runs):
        for flag, out in ((True, on), (False, off)):
            start = time.perf_counter()
            run_command(("true",), stop_escaped=flag)
            out.append((time.perf_counter() - start) * 1e3)
    return statistics.median(on), statistics.median(off)


def sweep_alone(runs: int) -> float:
    """Median µs of the sweep when nothing escaped (what every command pays)."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        orphans.stop_escaped("0.0.0", 999_999_999, busy=())
        times.append((time.perf_counter() - start) * 1e6)
    return statistics.median(times)


def one_daemon(runs: int) -> tuple[float, float]:
    """Median ms of a stage leaving a daemon, and of the same stage leaving none."""
    left, none = [], []
    with tempfile.TemporaryDirectory() as folder:
        for i in range(runs):
            pidfile, log = Path(folder, f"{i}.pid"), Path(folder, "log")
            for argv, out in (
                ((sys.executable, str(ESCAPE), "daemon", str(pidfile), str(log), "0"), left),
                ((sys.executable, "-c", "pass"), none),
            ):
                start = time.perf_counter()
                result = run_command(argv, timeout_s=60)
                out.append((time.perf_counter() - start) * 1e3)
                assert argv[2] != "daemon" or len(result.escaped) == 1
    return statistics.median(left), statistics.median(none)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    runs = parser.parse_args().runs
    on, off = per_command(runs)
    alone = sweep_alone(runs * 5)
    left, none = one_daemon(max(5, runs // 20))
    print(f"`true`: {on:.2f} ms with the sweep, {off:.2f} ms without ({runs} interleaved pairs)")
    print(f"the sweep alone, nothing escaped: {alone:.1f} µs (median of {runs * 5})")
    print(f"a stage leaving a daemon: {left:.0f} ms; `python -c pass`: {none:.0f} ms")
    print(
        "| escapes | a command's cost of stopping what escaped its group: nothing left / one "
        "daemon (fork, setsid, fork; stopped by SIGTERM) | `python bench/escapes.py` | "
        f"sweep **{alone:.0f} µs** per command; `true` {on:.2f} vs {off:.2f} ms; a stage "
        f"leaving a daemon {left:.0f} ms vs {none:.0f} ms for `python -c pass` | measure | "
        "measured |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

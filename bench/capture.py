"""Capture throughput and peak RSS: 1 GiB of output through greenloop.processes.process.run_command (issue 2).

Compared with the same command writing to /dev/null. Each measurement runs in a fresh Python
process that reports its own peak RSS (resource.getrusage(RUSAGE_SELF).ru_maxrss) after the run.
Goals: >= 500 MB/s, <= 100 MiB peak RSS.

Run: /tmp/glvenv/bin/python bench/capture.py [--runs N] [--gib G]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import HEADER, PYTHON, load, machine, row, today, verdict

GOAL_MB_S = 500
GOAL_RSS_MIB = 100
PRODUCERS = {
    # A writer faster than the pipe, so the reader is what gets measured.
    "python": (
        PYTHON + ' -c \'import sys; b = b"x" * (1 << 20); w = sys.stdout.buffer.write\n'
        "for _ in range({n} >> 20): w(b)'"
    ),
    "tr": 'head -c {n} /dev/zero | tr "\\0" "x"',
}

MEASURE = r"""
import json, resource, sys, time
from greenloop.processes.process import run_command
cmd, sink = sys.argv[1], sys.argv[2]
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
if sink == "devnull":
    import subprocess
    rc = subprocess.run(["sh", "-c", cmd + " > /dev/null"], check=False).returncode
    kept = 0
else:
    r = run_command(cmd, timeout_s=600)
    rc, kept = r.exit_code, len(r.stdout) + len(r.stderr) + len(r.merged)
    dropped = r.dropped_bytes
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"rc": rc, "s": seconds, "rss_kib": peak, "rss_before_kib": before, "kept": kept}))
"""


def measure(cmd: str, sink: str) -> dict[str, float]:
    out = subprocess.run(
        [PYTHON, "-c", MEASURE, cmd, sink], capture_output=True, text=True, check=True
    ).stdout
    result: dict[str, float] = json.loads(out)
    if result["rc"] != 0:
        raise SystemExit(f"{cmd!r} ({sink}) exited {result['rc']}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--producer", choices=PRODUCERS, default="python")
    args = parser.parse_args()
    n = int(args.gib * (1 << 30))
    cmd = PRODUCERS[args.producer].format(n=n)
    print(f"before: {load()}; command: {cmd}")
    rows: dict[str, list[dict[str, float]]] = {"devnull": [], "greenloop": []}
    for _ in range(args.runs):
        for sink, results in rows.items():  # interleaved, so load changes hit both alike
            results.append(measure(cmd, sink))
    for sink, results in rows.items():
        secs = [r["s"] for r in results]
        rss = [r["rss_kib"] / 1024 for r in results]
        print(
            f"{sink:>9}: median {statistics.median(secs):.2f} s ({min(secs):.2f}-{max(secs):.2f}),"
            f" {n / 1e6 / statistics.median(secs):.0f} MB/s; peak RSS median {statistics.median(rss):.1f} MiB"
            f" (max {max(rss):.1f}; interpreter before the run {results[0]['rss_before_kib'] / 1024:.1f} MiB);"
            f" text kept {int(results[0]['kept']):,} chars"
        )
    print(f"after: {load()}")
    gl = statistics.median(r["s"] for r in rows["greenloop"])
    base = statistics.median(r["s"] for r in rows["devnull"])
    mb_s = n / 1e6 / gl
    rss_max = max(r["rss_kib"] for r in rows["greenloop"]) / 1024
    print()
    print(HEADER)
    print(
        row(
            "capture",
            f"{args.gib:g} GiB via run_command: **{mb_s:.0f} MB/s** ({gl:.2f} s; `> /dev/null` "
            f"{n / 1e6 / base:.0f} MB/s, {base:.2f} s), peak RSS **{rss_max:.1f} MiB**",
            f">= {GOAL_MB_S} MB/s, <= {GOAL_RSS_MIB} MiB",
            verdict(mb_s >= GOAL_MB_S and rss_max <= GOAL_RSS_MIB),
            today(),
            machine(),
        )
    )


if __name__ == "__main__":
    main()

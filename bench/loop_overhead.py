"""Per-iteration overhead of greenloop's loop itself, excluding agent and verifier time (issue 4).

A git repo in a temporary directory whose verifier is a trivially fast Python script reporting one
failure per unit in ``state.txt`` (5 at the start); the shipped scripted agent lowers it by one per
iteration, so the real loop runs 5 iterations (5 -> 4 -> ... -> 0, success) with every step:
prompt file, agent, iteration commit, verifier, parse, digest, policy, run record, report.json.

Per iteration n: wall_n = t(iteration event n) - t(iteration event n-1) from events.jsonl, and
overhead_n = wall_n - agent_s_n - verifier_s_n (LoopResult.history). verifier_s is run_cascade's
duration (the command plus its parse/classify).

Run: /tmp/glvenv/bin/python bench/loop_overhead.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import HEADER, PYTHON, load, machine, row, today

from greenloop.agents.scripted import scripted
from greenloop.config import Config, StageSpec
from greenloop.loop.loop import run_loop

START = 5
VERIFIER = """import sys
n = int(open("state.txt").read())
for i in range(1, n + 1):
    print(f"src/app.py:{i}: error: unit {i} still failing")
sys.exit(1 if n else 0)
"""


def make_repo(root: Path) -> None:
    root.mkdir()
    (root / "check.py").write_text(VERIFIER)
    (root / "state.txt").write_text(f"{START}\n")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("".join(f"unit_{i} = {i}\n" for i in range(1, 9)))
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["-c", "user.name=b", "-c", "user.email=b@x", "commit", "-qm", "init"],
    ):
        subprocess.run(["git", *args], cwd=root, check=True)


def one_run(root: Path) -> tuple[list[float], list[tuple[float, float, float]], str, float]:
    steps = [
        [{"write": "state.txt", "text": f"{n}\n"}, {"summary": f"down to {n}"}]
        for n in range(START - 1, -1, -1)
    ]
    config = Config(
        stages=(StageSpec(name="test", run=f"{PYTHON} check.py"),),
        max_iters=START,
        timeout=60,
    )
    result = run_loop(root, scripted(steps), config=config)
    events_path = Path(result.record_dir) / "events.jsonl"
    events = [json.loads(line) for line in events_path.read_text().splitlines()]
    times = [e["t"] for e in events if e["kind"] == "iteration"]
    overheads, parts = [], []
    for it in result.history[1:]:
        wall = times[it.iteration] - times[it.iteration - 1]
        overheads.append(wall - it.agent_s - it.verifier_s)
        parts.append((wall, it.agent_s, it.verifier_s))
    return overheads, parts, result.result.value, result.duration_s


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"before: {load()}")
    all_overheads: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        bare = subprocess.run(
            [
                PYTHON,
                "-c",
                "import time,subprocess,sys; t=time.perf_counter(); "
                "subprocess.run([sys.executable,'-c','pass']); print(time.perf_counter()-t)",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for i in range(args.runs):
            root = Path(tmp) / f"repo{i}"
            make_repo(root)
            overheads, parts, outcome, total = one_run(root)
            all_overheads += overheads
            print(
                f"run {i + 1}: {outcome} in {len(parts)} iterations, {total:.2f} s; per iteration "
                "(wall / agent / verifier / overhead, ms): "
                + "; ".join(
                    f"{w * 1000:.0f}/{a * 1000:.0f}/{v * 1000:.0f}/{o * 1000:.0f}"
                    for (w, a, v), o in zip(parts, overheads, strict=True)
                )
            )
    print(f"(a bare `python -c pass` subprocess here: {float(bare) * 1000:.0f} ms)")
    print(f"after: {load()}")
    med = statistics.median(all_overheads)
    print()
    print(HEADER)
    print(
        row(
            "loop_overhead",
            f"greenloop's own time per iteration (wall - agent - verifier): median **{med * 1000:.0f} ms**"
            f" ({min(all_overheads) * 1000:.0f}-{max(all_overheads) * 1000:.0f} ms, "
            f"{len(all_overheads)} iterations)",
            "measure (no numeric goal in issue 4)",
            "measured",
            today(),
            machine(),
        )
    )


if __name__ == "__main__":
    main()

"""Issue 14: ``greenloop batch`` throughput and its own per-task costs.

20 tasks over 4 repositories; the scripted agent fixes the bug in iteration 1; the verifier burns
``--verifier-cpu`` seconds of CPU (1.0) then checks, so a task is ~2 s of CPU-bound verifier (the
failing baseline and the green re-run): a verifier that sleeps let two workers halve the wall time
whatever the machine's load, so the ratio could not fail; this one competes for the cores as a real
suite does. CPU time (user + sys of every process the batch waited for) is reported beside wall
time: the CPU a batch costs, which the machine's load does not change much.
Sequential (--workers 1) vs --workers 2 (goal: wall <= 0.6x), then the same with --executor ray.
Per task: greenloop's own overhead = wall_s - agent_s - verifier_s (clone, setup, git, records,
bookkeeping, measured inside the worker); the executor's overhead = (batch wall x slots - sum of
task walls) / tasks: what the pool or Ray adds around each task (process start, imports, scheduling,
bundle and record transfer). Ray's cluster start-up is timed apart.

Usage: python bench/batch.py [--tasks 20] [--verifier-cpu 1.0] [--skip-ray]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import GREENLOOP, PYTHON, load, row, verdict

CHECK = (
    "import time\nt = time.process_time()\nwhile time.process_time() - t < {cpu}:\n    pass\n"
    "from calc import add\nassert add(2, 3) == 5, add(2, 3)\n"
)
STEPS = [[{"replace": "calc.py", "old": "a - b", "new": "a + b"}]]


def make_repos(root: Path, count: int, cpu: float) -> list[Path]:
    repos = []
    for i in range(count):
        repo = root / f"repo{i}"
        repo.mkdir(parents=True)
        (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
        (repo / "check.py").write_text(CHECK.format(cpu=cpu))
        (repo / ".gitignore").write_text("__pycache__/\n")
        for args in (
            ["init", "-q", "-b", "main"],
            ["add", "-A"],
            ["-c", "user.name=b", "-c", "user.email=b@x", "commit", "-qm", "init"],
        ):
            subprocess.run(["git", *args], cwd=repo, check=True)
        repos.append(repo)
    return repos


def write_tasks(root: Path, n: int, cpu: float) -> Path:
    repos = make_repos(root / "src", 4, cpu)
    lines = [
        json.dumps(
            {"id": f"t{i:02d}", "repo": str(repos[i % 4]), "verifier": f"{PYTHON} -B check.py"}
        )
        for i in range(n)
    ]
    path = root / "tasks.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def run(
    tasks: Path, out: Path, agent: Path, *extra: str
) -> tuple[float, float, list[dict[str, object]]]:
    """(wall s, CPU s of the whole process tree, the result rows)."""
    argv = [
        GREENLOOP,
        "batch",
        str(tasks),
        "--out",
        str(out),
        "--agent",
        f"scripted:{agent}",
        *extra,
    ]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    if done.returncode != 0:
        sys.exit(f"batch failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    rows = [json.loads(ln) for ln in (out / "results.jsonl").read_text().splitlines()]
    return wall, cpu, rows


def own_overhead(rows: list[dict[str, object]]) -> float:
    return statistics.median(
        float(r["wall_s"]) - float(r["agent_s"]) - float(r["verifier_s"])
        for r in rows  # type: ignore[arg-type]
    )


def executor_overhead(wall: float, rows: list[dict[str, object]], slots: int) -> float:
    busy = sum(float(r["wall_s"]) for r in rows)  # type: ignore[arg-type]
    return (wall * slots - busy) / len(rows)


def ray_startup() -> float:
    probe = "import time,ray; t=time.monotonic(); ray.init(num_cpus=2, include_dashboard=False); print(time.monotonic()-t); ray.shutdown()"
    out = subprocess.run([PYTHON, "-c", probe], capture_output=True, text=True, check=True).stdout
    return float(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--skip-ray", action="store_true")
    parser.add_argument(
        "--verifier-cpu", type=float, default=1.0, help="CPU s a verifier run burns"
    )
    parser.add_argument(
        "--ray-workers", default="2",
        help="worker counts for Ray against the pool, comma-separated (8 on 2 cores: simulated)",
    )  # fmt: skip
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="glbench-batch-") as tmp:
        root = Path(tmp)
        agent = root / "steps.json"
        agent.write_text(json.dumps(STEPS))
        tasks = write_tasks(root, args.tasks, args.verifier_cpu)
        print(f"load before: {load()}")
        seq_wall, seq_cpu, seq_rows = run(tasks, root / "seq", agent, "--workers", "1")
        par_wall, par_cpu, par_rows = run(tasks, root / "par", agent, "--workers", "2")
        ratio = par_wall / seq_wall
        print(f"sequential {seq_wall:.1f} s, --workers 2 {par_wall:.1f} s: {ratio:.2f}x (wall)")
        print(
            f"CPU: sequential {seq_cpu:.1f} s, --workers 2 {par_cpu:.1f} s = {par_cpu / seq_cpu:.2f}x; "
            f"per task {seq_cpu / args.tasks:.2f} s, of which the verifier burns "
            f"{2 * args.verifier_cpu:.2f} s"
        )
        print(
            f"verifier per task (median): {statistics.median(float(r['verifier_s']) for r in par_rows):.2f} s"
        )  # type: ignore[arg-type]
        print(
            f"greenloop's own overhead per task (median, --workers 2): {own_overhead(par_rows) * 1000:.0f} ms"
        )
        print(
            f"greenloop's own overhead per task (median, --workers 1): {own_overhead(seq_rows) * 1000:.0f} ms"
        )
        print(
            f"local pool overhead per task: {executor_overhead(par_wall, par_rows, 2) * 1000:.0f} ms"
        )
        print(row("batch (issue 14)", f"{args.tasks} tasks, workers 2 vs 1", "python bench/batch.py",
                  f"{par_wall:.1f} s vs {seq_wall:.1f} s = {ratio:.2f}x", "<= 0.6x", verdict(ratio <= 0.6)))  # fmt: skip
        if args.skip_ray:
            return
        startup = ray_startup()
        pools = {1: (seq_wall, seq_rows), 2: (par_wall, par_rows)}
        for workers in (int(w) for w in args.ray_workers.split(",")):
            ray_against_pool(tasks, root, agent, workers, startup, pools)
        print(f"load after: {load()}")


def ray_against_pool(
    tasks: Path, root: Path, agent: Path, workers: int, startup: float,
    pools: dict[int, tuple[float, list[dict[str, object]]]],
) -> None:  # fmt: skip
    """Own time and executor time per task, Ray against the local pool at ``workers``."""
    if workers not in pools:
        wall, _, rows = run(tasks, root / f"pool{workers}", agent, "--workers", str(workers))
        pools[workers] = (wall, rows)
    pool_wall, pool_rows = pools[workers]
    ray_wall, ray_cpu, ray_rows = run(
        tasks, root / f"ray{workers}", agent, "--workers", str(workers), "--executor", "ray"
    )
    ray_exec = executor_overhead(ray_wall - startup, ray_rows, workers)
    pool_exec = executor_overhead(pool_wall, pool_rows, workers)
    print(
        f"workers {workers}: ray batch {ray_wall:.1f} s (cluster start {startup:.1f} s included), "
        f"CPU {ray_cpu:.1f} s (Ray's daemons not counted); own per task (median) ray "
        f"{own_overhead(ray_rows) * 1000:.0f} ms vs pool {own_overhead(pool_rows) * 1000:.0f} ms; "
        f"executor per task ray {ray_exec * 1000:.0f} ms vs pool {pool_exec * 1000:.0f} ms"
    )


if __name__ == "__main__":
    main()

"""The Claude Code Stop hook against the bare verifier (issues 6 and 16: it runs every agent turn).

Run: .venv/bin/python bench/hook.py [--runs N] [--slow-s S] [--project DIR --verifier CMD]

1. Overhead: interleaved pairs on a green one-test pytest repo, the bare verifier then the hook, both
   through ``sh -c`` as Claude Code runs a hook command; before each pair a new untracked file content
   so the hook's verification cache always misses (what a turn that edited something pays). CPU is
   user + sys of the whole process tree (every child waited for), wall is end to end; medians.
   Interleaved with them, the floor (``bench/_floor_hook.py``): the least a Python hook that keys a
   cache by ``git status`` and runs the verifier with greenloop's pytest plugin can cost.
   With ``--project``, the same on a clone of a real project, its own suite as the verifier
   (``CMD``, a shell string run in the clone): what the hook adds to a suite people really run.
2. Repeated stop on the unchanged green tree (the cache hit): wall and CPU, on the one-test repo and
   on a suite that takes ``--slow-s`` seconds (30 by default).
"""

from __future__ import annotations

import argparse
import json
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import GREENLOOP, HEADER, PYTHON, REPO, cached_env, load, machine, row, today, verdict

TEST = "def test_ok():\n    assert 1 + 1 == 2\n"
SLOW = "import time\n\n\ndef test_slow():\n    time.sleep({s})\n"
BARE = f"{PYTHON} -m pytest -q -p no:cacheprovider"
RATIO_GOAL = 1.15
HIT_GOAL_MS = 150.0


def make_repo(root: Path, test: str) -> Path:
    (root / "test_ok.py").write_text(test)
    stage = f'[[tool.greenloop.stage]]\nname = "test"\nrun = "{PYTHON} -m pytest -q -p no:cacheprovider"\n'
    (root / "pyproject.toml").write_text(stage)
    (root / ".gitignore").write_text("__pycache__/\n")
    for args in (
        ("init", "-q"),
        ("add", "-A"),
        ("-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "i"),
    ):
        subprocess.run(["git", *args], cwd=root, check=True)
    return root


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """(wall s, CPU s of the whole tree, stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, out.stdout


def hook_argv(root: Path) -> list[str]:
    event = json.dumps({"session_id": "bench", "stop_hook_active": False, "cwd": str(root)})
    return ["sh", "-c", f"echo '{event}' | {GREENLOOP} hook claude-stop"]


def clone_project(source: Path, into: Path, verifier: str) -> Path:
    """A clone of ``source`` with ``verifier`` as greenloop's one stage (greenloop.toml, committed)."""
    root = into / "project"
    subprocess.run(["git", "clone", "-q", "--local", str(source), str(root)], check=True)
    (root / "greenloop.toml").write_text(
        f'[[stage]]\nname = "test"\nrun = {json.dumps(verifier)}\n'
    )
    git = ("git", "-c", "user.name=b", "-c", "user.email=b@b")
    subprocess.run([*git, "add", "greenloop.toml"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "bench: the verifier"], cwd=root, check=True)
    return root


def floor_command(work: Path, bare: str) -> list[str]:
    """The floor hook, with greenloop's pytest plugin alone in a folder, as the real hook has it."""
    plugin = work / "plugin"
    plugin.mkdir(exist_ok=True)
    shutil.copy(REPO / "src/greenloop/parsers/greenloop_pytest_plugin.py", plugin)
    (work / "reports").mkdir(exist_ok=True)
    return [PYTHON, str(REPO / "bench/_floor_hook.py"), str(plugin), str(work / "reports"), bare]


def floor_argv(root: Path, work: Path, bare: str) -> list[str]:
    """The floor hook as Claude Code runs a hook: through ``sh -c``, the event on stdin."""
    event = json.dumps({"session_id": "bench", "stop_hook_active": False, "cwd": str(root)})
    return ["sh", "-c", f"echo '{event}' | {shlex.join(floor_command(work, bare))}"]


def overhead(
    root: Path, work: Path, runs: int, env: dict[str, str], bare: str = BARE
) -> dict[str, list[float]]:
    commands = {
        "bare": ["sh", "-c", bare],
        "floor": floor_argv(root, work, bare),
        "hook": hook_argv(root),
    }
    got: dict[str, list[float]] = {f"{n}_{m}": [] for n in commands for m in ("wall", "cpu")}
    for i in range(runs + 2):  # two warm-up rounds
        (root / "note.txt").write_text(f"turn {i}\n")  # a new tree: the cache must miss
        for name, argv in commands.items():
            wall, cpu, out = timed(argv, root, env)
            assert name != "hook" or out == "", f"the hook did not run the verifier green: {out!r}"
            if i >= 2:
                got[f"{name}_wall"].append(wall)
                got[f"{name}_cpu"].append(cpu)
    return got


def repeated(root: Path, runs: int, env: dict[str, str]) -> tuple[float, list[float], list[float]]:
    """The first stop's wall time, then the walls and CPUs of ``runs`` stops on the same tree."""
    first, _, _ = timed(hook_argv(root), root, env)
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu, out = timed(hook_argv(root), root, env)
        assert "reused" in out, f"the repeated stop ran the verifier again: {out!r}"
        walls.append(wall)
        cpus.append(cpu)
    return first, walls, cpus


def project(source: Path, verifier: str, runs: int, env: dict[str, str]) -> None:
    print(f"before: {load()}")
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory() as work:
        root = clone_project(source, Path(tmp), verifier)
        got = overhead(root, Path(work), runs, env, bare=verifier)
    print(f"after: {load()}")
    bare, hook = statistics.median(got["bare_cpu"]), statistics.median(got["hook_cpu"])
    floor = statistics.median(got["floor_cpu"])
    print(
        f"{source.name} ({verifier}): bare {bare * 1000:.0f} ms CPU, hook {hook * 1000:.0f} ms "
        f"= {hook / bare:.3f}x (+{(hook - bare) * 1000:.0f} ms), floor {floor / bare:.3f}x; "
        f"wall {ms(got['bare_wall'])} vs {ms(got['hook_wall'])}"
    )


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--slow-s", type=float, default=30.0)
    parser.add_argument("--project", type=Path, help="a real project's git checkout")
    parser.add_argument("--verifier", help="its suite, a shell string run in the clone")
    args = parser.parse_args()
    env = cached_env()
    if args.project:
        project(args.project.resolve(), args.verifier, args.runs, env)
        return
    print(f"before: {load()}")
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory() as work:
        fast = make_repo(Path(tmp), TEST)
        got = overhead(fast, Path(work), args.runs, env)
        ratios = [h / b for h, b in zip(got["hook_cpu"], got["bare_cpu"], strict=True)]
        _, hit_walls, hit_cpus = repeated(fast, args.runs, env)
    with tempfile.TemporaryDirectory() as tmp:
        slow = make_repo(Path(tmp), SLOW.format(s=args.slow_s))
        slow_first, slow_walls, slow_cpus = repeated(slow, args.runs, env)
    print(f"after: {load()}")
    cpu_ratio = statistics.median(got["hook_cpu"]) / statistics.median(got["bare_cpu"])
    wall_ratio = statistics.median(got["hook_wall"]) / statistics.median(got["bare_wall"])
    print(f"bare verifier: wall {ms(got['bare_wall'])}, CPU {ms(got['bare_cpu'])}")
    print(f"hook, cache missing: wall {ms(got['hook_wall'])}, CPU {ms(got['hook_cpu'])}")
    floor_ratio = statistics.median(got["floor_cpu"]) / statistics.median(got["bare_cpu"])
    print(
        f"floor hook (bench/_floor_hook.py): wall {ms(got['floor_wall'])}, CPU {ms(got['floor_cpu'])}"
        f" = {floor_ratio:.3f}x the bare verifier's CPU"
    )
    print(
        f"CPU ratio of medians {cpu_ratio:.3f}x, median of per-pair ratios "
        f"{statistics.median(ratios):.3f}x; wall ratio {wall_ratio:.3f}x"
    )
    print(
        f"repeated stop, one-test repo: wall {ms(hit_walls)} (max {max(hit_walls) * 1000:.0f} ms), CPU {ms(hit_cpus)}"
    )
    print(
        f"repeated stop, {args.slow_s:.0f} s suite: first stop {slow_first:.1f} s, then wall "
        f"{ms(slow_walls)} (max {max(slow_walls) * 1000:.0f} ms), CPU {ms(slow_cpus)}"
    )
    hit = max(statistics.median(hit_walls), statistics.median(slow_walls)) * 1000
    print()
    print(HEADER)
    print(
        row(
            "hook",
            f"Stop hook CPU (whole tree) on a green one-test pytest repo, cache missing: "
            f"**{cpu_ratio:.2f}x** the bare verifier ({ms(got['hook_cpu'])} vs {ms(got['bare_cpu'])}; "
            f"wall {ms(got['hook_wall'])} vs {ms(got['bare_wall'])}); the floor of any Python hook "
            f"(`bench/_floor_hook.py`): {floor_ratio:.2f}x ({ms(got['floor_cpu'])})",
            f"<= {RATIO_GOAL}x",
            verdict(cpu_ratio <= RATIO_GOAL),
            today(),
            machine(),
        )
    )
    print(
        row(
            "hook: repeated stop",
            f"unchanged green tree, cache hit: **{ms(hit_walls)}** wall (one-test repo), "
            f"**{ms(slow_walls)}** ({args.slow_s:.0f} s suite; its first stop {slow_first:.1f} s)",
            f"<= {HIT_GOAL_MS:.0f} ms",
            verdict(hit <= HIT_GOAL_MS),
            today(),
            machine(),
        )
    )


if __name__ == "__main__":
    main()

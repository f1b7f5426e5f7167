"""The verification cache's key on a 5 000-file repository (issue 16, goal < 20 ms).

Run: .venv/bin/python bench/cache_key.py [--files N] [--runs N] [--touched]
A real git repo with N committed files in 50 directories, then a typical agent turn's state: 5
tracked files edited, 3 new untracked files, one ignored build directory of 500 files.
``--touched``: every committed file's mtime is then set anew, content unchanged (a build tool, a
checkout and back, files written in the second the index was): git must read and hash each file
whose stat data no longer matches the index until the index is rewritten, and a
``--no-optional-locks`` status never rewrites it. The figure
is ``verify_cache.compute_key`` end to end (one git process, hashing the changed files), median.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import HEADER, load, machine, row, today, verdict

from greenloop.detect.stages import Cascade, Stage
from greenloop.verify.cache import compute_key

GOAL_MS = 20.0


def make_repo(root: Path, files: int, *, touched: bool = False) -> None:
    for i in range(files):
        path = root / f"pkg{i % 50}" / f"mod{i}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text(f"VALUE_{i} = {i}\n" * 20)
    (root / ".gitignore").write_text("build/\n")
    git = ("git", "-c", "user.name=b", "-c", "user.email=b@b")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "files"], cwd=root, check=True)
    if touched:
        for path in root.glob("pkg*/*.py"):
            path.touch()
    for i in range(5):
        (root / f"pkg{i}" / f"mod{i}.py").write_text("EDITED = True\n")
    for i in range(3):
        (root / f"new{i}.py").write_text(f"NEW = {i}\n")
    (root / "build").mkdir()
    for i in range(500):
        (root / "build" / f"out{i}.o").write_bytes(b"\0" * 1024)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--touched", action="store_true")
    args = parser.parse_args()
    cascade = Cascade(stages=(Stage(name="test", command="pytest -q", why="bench"),), source="b")
    print(f"before: {load()}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_repo(root, args.files, touched=args.touched)
        compute_key(root, cascade, timeout=600.0, all_stages=False)  # warm the index stat cache
        walls, cpus = [], []
        for _ in range(args.runs):
            before = resource.getrusage(resource.RUSAGE_SELF)
            children = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            compute_key(root, cascade, timeout=600.0, all_stages=False)
            walls.append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_SELF)
            kids = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(
                sum(
                    (a.ru_utime - b.ru_utime) + (a.ru_stime - b.ru_stime)
                    for a, b in ((after, before), (kids, children))
                )
            )
    print(f"after: {load()}")
    wall, cpu = statistics.median(walls) * 1000, statistics.median(cpus) * 1000
    print(
        f"compute_key, {args.files} files: wall median {wall:.1f} ms (min {min(walls) * 1000:.1f}), CPU {cpu:.1f} ms"
    )
    print()
    print(HEADER)
    print(
        row(
            "cache_key",
            f"cache key of a {args.files}-file repo (5 edited, 3 new, 500 ignored files"
            f"{'; every file touched' if args.touched else ''}): "
            f"**{wall:.1f} ms** wall, {cpu:.1f} ms CPU (median of {args.runs})",
            f"< {GOAL_MS:.0f} ms",
            verdict(wall < GOAL_MS),
            today(),
            machine(),
        )
    )


if __name__ == "__main__":
    main()

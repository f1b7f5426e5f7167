"""`greenloop check -- CMD` against `CMD` alone on a pytest suite of ~5 s (issue 2, goal <= 1.05x).

Generates a project in a temporary directory (tests that sleep a little and do a little CPU work),
runs both commands interleaved several times, and compares medians. Measured for a green suite and
for the same suite with two failing tests (so the parse + digest path is included).

Run: /tmp/glvenv/bin/python bench/check_overhead.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import GREENLOOP, HEADER, PYTHON, cached_env, load, machine, row, today, verdict

GOAL = 1.05
FILES, TESTS_PER_FILE = 10, 10  # 100 tests x ~50 ms = ~5 s
TEST = """
def test_{name}():
    time.sleep(0.04)
    assert sum(i * i for i in range(20_000)) > 0{extra}
"""


def make_project(root: Path, failing: bool) -> None:
    (root / "tests").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "suite"\nversion = "0"\n')
    for f in range(FILES):
        body = "import time\n"
        for t in range(TESTS_PER_FILE):
            extra = (
                "\n    assert {'a': 1} == {'a': 2}" if failing and f == 3 and t in (2, 7) else ""
            )
            body += TEST.format(name=f"case_{t}", extra=extra)
        (root / "tests" / f"test_mod{f}.py").write_text(body)
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=b", "-c", "user.email=b@x", "commit", "-qm", "init"],
    ):
        subprocess.run(["git", *args], cwd=root, check=True)


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, int]:
    start = time.perf_counter()
    rc = subprocess.run(
        argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
    ).returncode
    return time.perf_counter() - start, rc


def compare(root: Path, runs: int) -> tuple[float, float, int, int]:
    env = cached_env()
    cmd = [PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    timed(cmd, root, env)  # warm the caches once
    bare, wrapped = [], []
    rcs = set()
    for _ in range(runs):
        s, rc_bare = timed(cmd, root, env)
        bare.append(s)
        s, rc_gl = timed([GREENLOOP, "check", "--", *cmd], root, env)
        wrapped.append(s)
        rcs.add((rc_bare, rc_gl))
    (rc_bare, rc_gl), *_ = rcs
    return statistics.median(bare), statistics.median(wrapped), rc_bare, rc_gl


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"before: {load()}")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for failing in (False, True):
            root = Path(tmp) / ("failing" if failing else "green")
            make_project(root, failing)
            bare, wrapped, rc_bare, rc_gl = compare(root, args.runs)
            ratio = wrapped / bare
            results[failing] = ratio, bare, wrapped
            label = "2 failing" if failing else "green"
            print(
                f"{label:>9}: pytest alone {bare:.2f} s (exit {rc_bare}), greenloop check -- pytest "
                f"{wrapped:.2f} s (exit {rc_gl}): {ratio:.3f}x, +{(wrapped - bare) * 1000:.0f} ms"
                f" (medians of {args.runs})"
            )
    print(f"after: {load()}")
    (g_ratio, g_bare, g_wrapped), (f_ratio, *_) = results[False], results[True]
    print()
    print(HEADER)
    print(
        row(
            "check_overhead",
            f"`greenloop check -- pytest` {g_wrapped:.2f} s vs `pytest` {g_bare:.2f} s on a ~5 s "
            f"green suite = **{g_ratio:.3f}x** (2 failing: {f_ratio:.3f}x)",
            f"<= {GOAL}x",
            verdict(max(g_ratio, f_ratio) <= GOAL),
            today(),
            machine(),
        )
    )


if __name__ == "__main__":
    main()

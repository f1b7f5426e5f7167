"""Failing-first iterations vs full re-runs (issue 7), side by side in one run.

A generated git repo with 300 pytest tests (299 pass, each sleeping 0.05 s: a ~15 s suite) and one
failing test. The shipped scripted agent needs 2 iterations: iteration 1 is an incomplete fix,
iteration 2 the fix. The same loop runs twice, in fresh copies of the repo: ``--subset auto``
(failing-first, full gate) and ``--subset off`` (the full suite every iteration).

Per iteration: ``verifier_s`` from LoopResult.history (everything the verification step ran: the
subset, the full gate, flaky re-runs). Whole loop: LoopResult.duration_s.
Goal: verifier time of a non-final iteration with failing-first <= 0.2x the full re-run.

Run: /tmp/glvenv/bin/python bench/failing_first.py [--tests 300] [--sleep 0.05]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from greenloop.agents.scripted import scripted
from greenloop.config import Config, StageSpec
from greenloop.loop.loop import LoopResult, run_loop

PYTHON = sys.executable
FILES = 10
AREA = "def area(w, h):\n    return w + h\n"
TEST_AREA = "from shapes import area\n\n\ndef test_area():\n    assert area(3, 4) == 12\n"
STEPS = [
    [{"replace": "shapes.py", "old": "return w + h", "new": "return w * h + 1"}],
    [{"replace": "shapes.py", "old": "return w * h + 1", "new": "return w * h"}],
]


def make_repo(root: Path, tests: int, sleep: float) -> None:
    root.mkdir()
    (root / "shapes.py").write_text(AREA)
    (root / "tests").mkdir()
    (root / "tests" / "test_area.py").write_text(TEST_AREA)
    per_file = (tests - 1) // FILES
    for f in range(FILES):
        count = per_file + (1 if f < (tests - 1) % FILES else 0)
        body = "import time\n\n" + "".join(
            f"\ndef test_slow_{f}_{i}():\n    time.sleep({sleep})\n" for i in range(count)
        )
        (root / "tests" / f"test_slow_{f}.py").write_text(body)
    (root / ".gitignore").write_text("__pycache__/\n.pytest_cache/\n")
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["-c", "user.name=b", "-c", "user.email=b@x", "commit", "-qm", "init"],
    ):
        subprocess.run(["git", *args], cwd=root, check=True)


def one_loop(root: Path, mode: str) -> LoopResult:
    config = Config(
        stages=(StageSpec(name="test", run=f"{PYTHON} -m pytest -q -p no:cacheprovider"),),
        max_iters=3,
        timeout=300,
        subset=mode,
    )
    return run_loop(root, scripted(STEPS), config=config)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tests", type=int, default=300)
    parser.add_argument("--sleep", type=float, default=0.05)
    args = parser.parse_args()
    results: dict[str, LoopResult] = {}
    with tempfile.TemporaryDirectory(prefix="greenloop-bench-ff-") as tmp:
        for mode in ("auto", "off"):
            root = Path(tmp) / mode
            make_repo(root, args.tests, args.sleep)
            results[mode] = one_loop(root, mode)
    auto, off = results["auto"], results["off"]
    print(f"{args.tests} tests, {args.sleep} s each; results: auto={auto.result}, off={off.result}")
    print("| iteration | failing-first verifier s | (subset?) | --subset off verifier s | ratio |")
    print("| --- | --- | --- | --- | --- |")
    for a, o in zip(auto.history, off.history, strict=False):
        ratio = a.verifier_s / o.verifier_s if o.verifier_s else float("nan")
        print(
            f"| {a.iteration} | {a.verifier_s:.2f} | {'subset' if a.subset else 'full'} | "
            f"{o.verifier_s:.2f} | {ratio:.3f}x |"
        )
    print(f"| whole loop (wall) | {auto.duration_s:.2f} | | {off.duration_s:.2f} | "
          f"{auto.duration_s / off.duration_s:.3f}x |")  # fmt: skip
    non_final = [
        a.verifier_s / o.verifier_s
        for a, o in zip(auto.history[1:-1], off.history[1:-1], strict=False)
    ]
    verdict = "PASS" if non_final and max(non_final) <= 0.2 else "FAIL"
    print(
        f"non-final iterations: {', '.join(f'{r:.3f}x' for r in non_final)} (goal <= 0.2x): {verdict}"
    )


if __name__ == "__main__":
    main()

"""Issue 15: mutant generation on a real project: candidates, how many the verifier kills in a
trusted way, and the time it takes (the verifier runs once per candidate tried).

Usage: python bench/mutants.py REPO N SEED -- VERIFIER ARGV...
(REPO: a clean checkout at a pinned commit; see docs/bench.md for the projects and commands)
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from greenloop import git
from greenloop.bench import seed
from greenloop.checking import check
from greenloop.config import Config


def main(argv: list[str]) -> None:
    split = argv.index("--")
    repo, n, seed_value = Path(argv[0]).resolve(), int(argv[1]), int(argv[2])
    command = argv[split + 1 :]
    with tempfile.TemporaryDirectory(prefix="glbench-mutants-") as tmp:
        clean = seed.export_head(repo, Path(tmp) / "clean")
        start = time.monotonic()
        green, _ = check(clean, command, config=Config())
        baseline_s = time.monotonic() - start
        print(f"baseline: {green.verdict.value} in {baseline_s:.1f} s")
        files = git.git(repo, "ls-files", "*.py").stdout.split()
        candidates = seed.candidate_mutants(clean, files, [" ".join(command)])
        start = time.monotonic()
        chosen = seed.select(
            clean, candidates, n=n, seed=seed_value, command=command, config=Config(),
            max_failing=5,
        )  # fmt: skip
        took = time.monotonic() - start
    kinds: dict[str, int] = {}
    for m in chosen.kept:
        kinds[m.kind] = kinds.get(m.kind, 0) + 1
    print(f"candidates {chosen.candidates}, tried {chosen.tried}, kept {len(chosen.kept)} "
          f"({100 * len(chosen.kept) / max(chosen.tried, 1):.0f} % of those tried) in {took:.1f} s "
          f"({took / max(chosen.tried, 1):.2f} s per candidate); kinds {kinds}")  # fmt: skip
    print(f"files: {sorted({m.path for m in chosen.kept})}")


if __name__ == "__main__":
    main(sys.argv[1:])

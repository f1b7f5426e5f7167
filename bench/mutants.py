"""Issue 15: mutant generation on a real project: candidates, how many the verifier kills in a
trusted way, and the time it takes (the verifier runs once per candidate tried).

Usage: python bench/mutants.py REPO N SEED [--setup CMD] -- VERIFIER ARGV...
(REPO: a clean checkout at a pinned commit; see docs/bench.md for the projects and commands)
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from greenloop import git
from greenloop.bench import seed
from greenloop.config import Config
from greenloop.loop.checking import check


def main(argv: list[str]) -> None:
    split = argv.index("--")
    repo, n, seed_value = Path(argv[0]).resolve(), int(argv[1]), int(argv[2])
    setup = argv[argv.index("--setup") + 1] if "--setup" in argv[:split] else None
    command = argv[split + 1 :]
    with tempfile.TemporaryDirectory(prefix="glbench-mutants-") as tmp:
        start = time.monotonic()
        clean = seed.prepare_clean(repo, Path(tmp) / "clean", setup)
        print(f"export + setup: {time.monotonic() - start:.1f} s")
        start = time.monotonic()
        green, _ = check(clean, command, config=Config())
        print(f"baseline: {green.verdict.value} in {time.monotonic() - start:.1f} s")
        start = time.monotonic()
        candidates = seed.candidate_mutants(clean, git.tracked_paths(repo), [" ".join(command)])
        listed = time.monotonic() - start
        chosen = seed.select(
            clean, candidates, n=n, seed=seed_value, command=command, config=Config(),
            max_failing=5,
        )  # fmt: skip
        took = time.monotonic() - start
    kinds = Counter(m.kind for m in chosen.kept)
    print(f"candidates {chosen.candidates} (listed in {listed:.2f} s) over "
          f"{len({m.path for m in candidates})} files; tried {chosen.tried}, kept "
          f"{len(chosen.kept)} ({100 * len(chosen.kept) / max(chosen.tried, 1):.0f} % of those "
          f"tried) in {took:.1f} s ({took / max(chosen.tried, 1):.2f} s per candidate); "
          f"kinds {dict(sorted(kinds.items()))}")  # fmt: skip
    print(f"files: {sorted({m.path for m in chosen.kept})}")


if __name__ == "__main__":
    main(sys.argv[1:])

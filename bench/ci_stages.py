"""Issue 38: the commands greenloop derives from real projects' CI files against the ones read by
hand (tests/resources/ci/<project>/expected.json): precision, recall, and every miss and extra.

    python bench/ci_stages.py [--project NAME ...]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from ci_corpus import CORPUS, projects, score


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", action="append", default=[], help="score these only")
    args = parser.parse_args()
    chosen = [CORPUS / p for p in args.project] if args.project else list(projects())
    matched = extra = missed = 0
    start = time.process_time()
    for project in chosen:
        result = score(project)
        matched += len(result.matched)
        extra += len(result.extra)
        missed += len(result.missed)
        for want in result.missed:
            print(f"{project.name}: missed {want['origin']} {want['command']!r}")
        for got in result.extra:
            print(f"{project.name}: extra  {got.origin} {got.command.splitlines()[0]!r}")
    took = time.process_time() - start
    precision = matched / (matched + extra) if matched + extra else 1.0
    recall = matched / (matched + missed) if matched + missed else 1.0
    print(
        f"| ci_stages | {len(chosen)} projects, {matched + missed} commands read by hand | "
        f"precision {precision:.1%}, recall {recall:.1%} ({matched} matched, {extra} extra, "
        f"{missed} missed); {took * 1000 / max(len(chosen), 1):.1f} ms CPU per project |"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

#!/usr/bin/env python3
"""Propose mutation sites for JS/TS, Go and Rust manifests: the first seeded site the runner fails on.

The Python mutator's sites are chosen by hand (a seed per file); C-like sources have many sites that
no test reaches, so this walks ``clike.mutate``'s seeded order, commits each candidate, runs the
runner's ``argv`` and prints the first one that exits non-zero as a manifest line
(``{ file, kind, line }``) to paste under ``mutations``. Compile/syntax kinds fail on the first try.

    python3 scripts/conformance/find_sites.py --project kleur --runner uvu --kind return_value
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import clike
from common import PROJECTS, checkout, commit_mutation, install, load_project, run, run_env

LANGS = {".js": "js", ".mjs": "js", ".ts": "js", ".go": "go", ".rs": "rust"}


def first_red(project_name: str, runner_name: str, kind: str, files: list[str], seed: int, tries: int) -> str:
    project = load_project(PROJECTS / f"{project_name}.toml")
    runner = next(r for r in project.runners if r.runner == runner_name)
    root = checkout(project)
    install(project)
    lang = LANGS[Path(files[0]).suffix]
    order = clike.mutate(root, files, lang=lang, kind=clike.KIND_NAMES[kind], seed=seed)
    for mutation in order[:tries]:
        root = checkout(project)
        firsts = clike.sites((root / mutation.file).read_text(encoding="utf-8"), kind, name=mutation.file)
        if not any(e.line == mutation.line and e.after == mutation.after for e in firsts):  # type: ignore[attr-defined]
            continue  # not the line's first site: mutate.choose could not reproduce it
        commit_mutation(root, mutation.file, mutation.line, mutation.after)
        env = run_env(project, runner)
        if run(runner.argv, root / runner.cwd, env, runner.timeout).exit_code != 0:
            checkout(project)
            return f'  {{ file = "{mutation.file}", kind = "{kind}", line = {mutation.line} }},'
    checkout(project)
    return f"# no {kind} site in the first {tries} of seed {seed} fails {runner_name}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--project", required=True)
    ap.add_argument("--runner", required=True)
    ap.add_argument("--kind", required=True, choices=sorted(clike.KIND_NAMES))
    ap.add_argument("--file", action="append", required=True, help="source file(s) to mutate")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tries", type=int, default=6)
    args = ap.parse_args()
    print(first_red(args.project, args.runner, args.kind, args.file, args.seed, args.tries))
    return 0


if __name__ == "__main__":
    sys.exit(main())

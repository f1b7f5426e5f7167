#!/usr/bin/env python3
"""Re-run each corpus case through ``greenloop check`` itself and compare with the case's facts.

tests/test_conformance.py replays the runner's captured output through parse -> classify -> digest.
``greenloop check`` does more: its own environment (PAGER=cat; the caller's colour variables kept)
and side channels (the pytest plugin's report, ``GOFLAGS=-v`` for ``go test``, node's junit
reporter), and its byte cap. This
script re-creates each case's mutant in the checkout, runs ``greenloop check --no-cache --format
json -- <argv>`` there with the runner's environment, and prints what differs from the facts: the
verdict class, the counts, the first failing id, error type, message and mutated frame in the
digest, phantom failing tests (compare.py: the same comparison as the conformance test).

    python3 scripts/conformance/live.py --project toml --project defu
    python3 scripts/conformance/live.py --project cachetools --runner pytest

Not a test: it runs every suite (minutes), and the runners' own nondeterminism shows (jest runs
files in parallel: the first failing file may change between runs).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (
    REAL,
    Project,
    Runner,
    checkout,
    commit_mutation,
    install,
    load_projects,
    run_env,
)
from compare import mismatches

GREENLOOP = shutil.which("greenloop") or str(Path(sys.executable).parent / "greenloop")


def live(project: Project, runner: Runner, case: Path) -> dict[str, Any]:
    data = json.loads(case.read_text(encoding="utf-8"))
    root = checkout(project)
    m = data["mutation"]
    if m:
        commit_mutation(root, m["file"], m["line"], m["after"])
    env = run_env(project, runner)
    argv = [runner.argv] if isinstance(runner.argv, str) else list(runner.argv)
    done = subprocess.run(
        [GREENLOOP, "check", "--no-cache", "--format", "json", "--", *argv],
        cwd=root / runner.cwd, env=env, capture_output=True, text=True, check=False,
        timeout=runner.timeout + 60,
    )  # fmt: skip
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--project", action="append", required=True)
    ap.add_argument("--runner", action="append", default=[])
    args = ap.parse_args()
    bad = 0
    for project in load_projects(set(args.project)):
        install(project)
        for runner in project.runners:
            if args.runner and runner.runner not in args.runner:
                continue
            # the manifest's own cases (baseline + one per mutation), not capture_verdict_cases.py's
            # (node-test/abbrev-js-glob-0 runs another command)
            names = [f"{project.name}-{n}" for n in range(len(runner.mutations) + 1)]
            cases = [REAL / runner.runner / name / "case.json" for name in names]
            for case in (c for c in cases if c.exists()):
                data = json.loads(case.read_text(encoding="utf-8"))
                out = live(project, runner, case)
                wrong = mismatches(data["facts"], set(data["facts_unverified"]), out)
                bad += bool(wrong)
                c = out["counts"] or {}
                print(
                    f"{runner.runner}/{case.parent.name}: {out['verdict']}, "
                    f"{c.get('passed')} passed, {c.get('failed')} failed, "
                    f"{out['digest_tokens']} tokens: {'; '.join(wrong) or 'right'}",
                    flush=True,
                )
        checkout(project)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Regenerate the conformance corpus: tests/resources/real/<runner>/<project>-<n>/ (issue 10).

For each project manifest (tests/resources/real/projects/<project>.toml) and each of its runners:
check out the fetched snapshot at the pinned commit into /tmp/glreal/<project>, install it once into
its venv, run the unmodified baseline (case 0), then each seeded one-line mutation committed on top
of the pinned commit (cases 1..n), each followed by a second run for the ground truth.

Usage:
    python3 scripts/conformance/capture.py                  # every project and runner
    python3 scripts/conformance/capture.py --project cachetools --runner pytest
    python3 scripts/conformance/capture.py --list           # projects, runners, mutations
    python3 scripts/conformance/capture.py --project eslint-rewrite --runner mocha --case 3
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mutate
from common import (
    REAL,
    Case,
    Mutation,
    MutationSpec,
    Peer,
    Project,
    Runner,
    Truth,
    checkout,
    clear_cases,
    commit_mutation,
    install,
    load_projects,
    manifests,
    read_case,
    repo_files,
    repo_modules,
    run,
    run_env,
    tool_version,
    write_case,
    write_json,
)  # fmt: skip

TRUTHS: dict[str, Truth] = {}
PEERS: dict[str, dict[str, Peer]] = {}


def register_ecosystems() -> None:
    """Each ecosystem module exports TRUTHS: {truth name: function}. Add yours here."""
    import python

    TRUTHS.update(python.TRUTHS)
    PEERS.update(python.PEERS)
    for name in ("node", "native"):  # corpus-js's modules, when present
        try:
            module = __import__(name)
        except ModuleNotFoundError:
            continue
        TRUTHS.update(module.TRUTHS)
        PEERS.update(getattr(module, "PEERS", {}))


def mutation_for(project: Project, spec: MutationSpec) -> Mutation:
    path = project.root / spec.file
    edit = mutate.choose(
        path.read_text(encoding="utf-8"), spec.kind, name=spec.file, seed=spec.seed, line=spec.line
    )
    return Mutation(
        file=spec.file, line=edit.line, kind=spec.kind, before=edit.before, after=edit.after,
        note=spec.note,
    )  # fmt: skip


def capture_one(project: Project, runner: Runner, n: int, spec: MutationSpec | None) -> Case:
    root = checkout(project)
    mutation = None
    if spec is not None:
        mutation = mutation_for(project, spec)
        commit_mutation(root, mutation.file, mutation.line, mutation.after)
    env = run_env(project, runner)
    cwd = root / runner.cwd
    done = run(runner.argv, cwd, env, runner.timeout)
    facts = TRUTHS[runner.truth](project, runner, done, mutation)
    return Case(
        project=project, runner=runner, n=n, run=done, facts=facts, mutation=mutation,
        version=tool_version(runner, cwd, env), repo_modules=repo_modules(cwd),
        repo_files=repo_files(cwd), manifests=manifests(cwd),
    )  # fmt: skip


def capture_runner(project: Project, runner: Runner, only: set[int] | None = None) -> None:
    """Every case of the runner (the old case dirs dropped), or only the case numbers ``only``."""
    checkout(project)
    install(project)
    if not only:
        clear_cases(project, runner)
    for n, spec in enumerate((None, *runner.mutations)):
        if only and n not in only:
            continue
        start = time.monotonic()
        case = capture_one(project, runner, n, spec)
        where = write_case(case)
        f = case.facts
        first = f.failing_ids[0] if f.failing_ids else "-"
        print(
            f"[{runner.runner}] {where.name}: exit {case.run.exit_code} -> {f.verdict}, "
            f"{len(f.failing_ids)} failing (first {first}), {f.error_type}: {f.message!r} "
            f"@ {f.frame} {f.counts} ({time.monotonic() - start:.0f} s)",
            flush=True,
        )
    checkout(project)


def capture_peers(project: Project, runner: Runner) -> None:
    """Re-create each existing case's mutant and add the peers' outputs (``peers`` in case.json)."""
    peers = PEERS.get(runner.runner, {})
    if not peers:
        return
    install(project)
    for where in sorted(REAL.glob(f"{runner.runner}/{project.name}-*/case.json")):
        data = read_case(where)
        root = checkout(project)
        m = data["mutation"]
        if m:
            commit_mutation(root, m["file"], m["line"], m["after"])
        data["peers"] = {name: peer(project, runner) for name, peer in peers.items()}
        write_json(where, data)
        codes = {name: p["exit_code"] for name, p in data["peers"].items()}
        print(f"[{runner.runner}] {where.parent.name}: peers {codes}", flush=True)
    checkout(project)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--project", action="append", default=[], help="only this project (repeatable)")
    ap.add_argument("--runner", action="append", default=[], help="only this runner (repeatable)")
    ap.add_argument("--case", action="append", type=int, default=[], help="only case n (repeatable)")
    ap.add_argument("--list", action="store_true", help="list projects, runners and mutations")
    ap.add_argument("--peers", action="store_true", help="also capture peers (pytest-receptor)")
    ap.add_argument("--peers-only", action="store_true", help="only add peers to existing cases")
    args = ap.parse_args()
    register_ecosystems()
    failed = 0
    for project in load_projects(set(args.project) or None):
        for runner in project.runners:
            if args.runner and runner.runner not in args.runner:
                continue
            if args.list:
                kinds = ", ".join(m.kind for m in runner.mutations)
                print(
                    f"{project.name} ({project.repo}@{project.commit[:10]}) {runner.runner}: {kinds}"
                )
                continue
            try:
                if not args.peers_only:
                    capture_runner(project, runner, set(args.case))
                if args.peers or args.peers_only:
                    capture_peers(project, runner)
            except Exception as exc:  # one broken project never stops the others
                failed += 1
                print(
                    f"[error] {project.name}/{runner.runner}: {type(exc).__name__}: {exc}",
                    flush=True,
                )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

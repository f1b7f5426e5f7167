"""``greenloop bench``: flags -> run_bench -> a table per agent. Only argparse at import time."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

RUN_OPTIONS = (
    "max_iters",
    "max_time",
    "timeout",
    "agent_timeout",
    "max_cost",
    "max_tokens",
    "subset",
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    from greenloop.batch.cli import add_limits  # argparse only, as this module

    p.add_argument(
        "--agent",
        action="append",
        help="an agent (preset or shell command) to run on every mutant; repeat to compare",
    )
    p.add_argument(
        "--out",
        metavar="DIR",
        help="bench.json, the mutant repositories, answers and each arm's batch",
    )
    p.add_argument(
        "--export",
        nargs=2,
        metavar=("FORMAT", "DIR"),
        help="write the selected mutants as tasks of another harness instead of running agents: "
        "'harbor DIR' (one Harbor task directory per mutant; docs/bench.md)",
    )
    _add_mutants(p)
    _add_pool(p)
    add_limits(p)
    _add_arms(p)
    p.add_argument(
        "--format",
        choices=("text", "json", "md", "html"),
        default="text",
        help="the scores on stdout, as greenloop report --bench DIR shows them",
    )


def _add_mutants(p: argparse.ArgumentParser) -> None:
    """Which bugs are seeded, and how many."""
    p.add_argument("--mutants", type=int, default=10, metavar="N", help="bugs to seed (default 10)")
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        metavar="S",
        help="picks the mutants: same seed, same commit, same tasks (default 0)",
    )
    p.add_argument(
        "--max-failing",
        type=int,
        default=5,
        metavar="N",
        help="a mutant is kept when at most N tests fail with it (default 5)",
    )


def _add_pool(p: argparse.ArgumentParser) -> None:
    """Where the tasks run."""
    p.add_argument("--workers", type=int, help="tasks at once (default: half the cores)")
    p.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="run the tasks in a local process pool (default) or on Ray, as greenloop batch",
    )


def _add_arms(p: argparse.ArgumentParser) -> None:
    """Each task's loop and what its agent reads."""
    p.add_argument(
        "--subset",
        choices=("auto", "failing", "affected", "off"),
        help="each task's loop: failing tests, then affected ones, before the gate (default auto)",
    )
    p.add_argument(
        "--feedback",
        choices=("digest", "raw", "both"),
        default="digest",
        help="what the agent reads: the digest, the raw output (first/last 5 000 chars), or both arms",
    )
    p.add_argument(
        "--setup",
        metavar="CMD",
        help="shell command run in the clean tree and in every task's workspace (npm ci …)",
    )


def main_bench(args: argparse.Namespace) -> int:
    from greenloop.errors import FatalError

    if args.export:
        return _main_export(args)
    if not args.agent or not args.out:
        raise FatalError(
            "bench needs --agent A (one or more) and --out DIR, or --export harbor DIR"
        )
    from greenloop.bench.report import render_bench
    from greenloop.bench.run import run_bench

    data = run_bench(
        Path(args.repo),
        agents=args.agent,
        out=args.out,
        mutants=args.mutants,
        seed_value=args.seed,
        command=args.command,
        max_failing=args.max_failing,
        executor=args.executor,
        workers=args.workers,
        overrides={k: getattr(args, k) for k in RUN_OPTIONS},
        feedback=args.feedback,
        setup=args.setup,
    )
    sys.stdout.write(render_bench(data, args.format))
    return 0


def _main_export(args: argparse.Namespace) -> int:
    from greenloop.bench.harbor import FORMAT, export_harbor
    from greenloop.errors import FatalError

    fmt, dest = args.export
    if fmt != FORMAT:
        raise FatalError(f"--export: unknown format {fmt!r}; known: {FORMAT}")
    if args.agent or args.feedback != "digest":
        raise FatalError("--export writes tasks and runs no agent: drop --agent and --feedback")
    tasks = export_harbor(
        Path(args.repo),
        dest=dest,
        work=args.out,
        mutants=args.mutants,
        seed_value=args.seed,
        command=args.command,
        max_failing=args.max_failing,
        overrides={k: getattr(args, k) for k in RUN_OPTIONS},
        setup=args.setup,
    )
    for task in tasks:
        m = task.mutant
        print(f"{task.path}  {m.path}:{m.line} {m.kind}")
    print(
        f"greenloop bench: {len(tasks)} Harbor task(s) in {Path(dest).resolve()} "
        "(the Dockerfiles are written, not built)",
        file=sys.stderr,
    )
    return 0

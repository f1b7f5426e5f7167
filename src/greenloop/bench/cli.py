"""``greenloop bench``: flags -> run_bench -> a table per agent. Only argparse at import time."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

RUN_OPTIONS = ("max_iters", "max_time", "timeout", "agent_timeout")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--agent", action="append", required=True, help="repeat to compare agents")
    p.add_argument("--out", required=True, metavar="DIR")
    p.add_argument("--mutants", type=int, default=10, metavar="N")
    p.add_argument("--seed", type=int, default=0, metavar="S")
    p.add_argument("--max-failing", type=int, default=5, help="failing tests a mutant may cause")
    p.add_argument("--workers", type=int)
    p.add_argument("--executor", choices=("local", "ray"), default="local")
    p.add_argument("--max-iters", type=int)
    p.add_argument("--max-time", type=float)
    p.add_argument("--timeout", type=float)
    p.add_argument("--agent-timeout", type=float)
    p.add_argument(
        "--feedback",
        choices=("digest", "raw", "both"),
        default="digest",
        help="what the agent reads: the digest, the raw output (first/last 5 000 chars), or both arms",
    )
    p.add_argument(
        "--format",
        choices=("text", "json", "md", "html"),
        default="text",
        help="the scores on stdout, as greenloop report --bench DIR shows them",
    )


def main_bench(args: argparse.Namespace) -> int:
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
    )
    sys.stdout.write(render_bench(data, args.format))
    return 0

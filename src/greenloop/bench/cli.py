"""``greenloop bench``: flags -> run_bench -> a table per agent. Only argparse at import time."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

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
    p.add_argument("--format", choices=("text", "json"), default="text")


def main_bench(args: argparse.Namespace) -> int:
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
    sys.stdout.write(json.dumps(data, indent=2) + "\n" if args.format == "json" else render(data))
    return 0


def render(data: dict[str, Any]) -> str:
    lines = [
        f"greenloop bench: {len(data['mutants'])} mutants (seed {data['seed']}; "
        f"{data['tried']} tried of {data['candidates']} candidates)"
    ]
    for a in data["agents"]:
        low, high = a["wilson95"]
        lines.append(
            f"  {a['agent']} [{a['feedback']}]: {a['solved']}/{a['total']} solved "
            f"(95 % CI {100 * low:.0f}-{100 * high:.0f} %), {a['cheat_attempts']} cheat attempt(s), "
            f"median iterations to green {a['median_iterations_to_green']}"
        )
    for pair in data["pairs"]:
        lines.append(
            f"  {pair['first']} vs {pair['second']}: {pair['only_first']} vs {pair['only_second']} "
            f"solved by one only, McNemar p = {pair['mcnemar_p']}"
        )
    return "\n".join(lines) + "\n"

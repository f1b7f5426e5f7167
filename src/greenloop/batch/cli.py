"""``greenloop batch``: flags -> run_batch -> the aggregate on stdout -> 0 / 1 / 2 / 130.

Only argparse at import time: the parser is built on every greenloop call."""

from __future__ import annotations

import argparse
import sys

from greenloop.errors import FatalError

SWE_BENCH = "swe-bench"
RUN_OPTIONS = (
    "max_iters",
    "max_time",
    "timeout",
    "agent_timeout",
    "subset",
    "budget",
    "on_fail",
    "max_cost",
    "max_tokens",
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "tasks",
        metavar="TASKS.jsonl",
        help="one JSON object per line (id, repo, ...); or 'stats DIR': a batch's figures; "
        "with --format swe-bench: SWE-bench instances",
    )
    p.add_argument("stats_dir", nargs="?", help=argparse.SUPPRESS)  # batch stats DIR
    p.add_argument("--out", metavar="DIR", help="results, records and workspaces (required)")
    p.add_argument("--agent", help="default agent for tasks without their own")
    _add_pool(p)
    _add_resume(p)
    add_limits(p)
    _add_batch_budget(p)
    _add_loop_options(p)
    _add_input_format(p)


def _add_pool(p: argparse.ArgumentParser) -> None:
    """Where the tasks run, and how many at once."""
    p.add_argument("--workers", type=_positive_int, help="tasks at once (default: half the cores)")
    p.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="local: a process pool on this machine (default); ray: one Ray task per task",
    )
    p.add_argument("--ray-address", help="join this Ray cluster (default: start a local one)")
    p.add_argument(
        "--cpus-per-task",
        type=_positive_float,
        default=1.0,
        metavar="C",
        help="CPUs Ray reserves for each task (default 1; ray executor only)",
    )
    p.add_argument(
        "--max-parallel-agents",
        type=_positive_int,
        default=0,
        metavar="K",
        help="agent calls at once across the batch (verifiers are not counted)",
    )


def _add_resume(p: argparse.ArgumentParser) -> None:
    """Which finished tasks run again."""
    p.add_argument("--redo", action="store_true", help="run tasks already in results.jsonl again")
    p.add_argument(
        "--redo-failed",
        action="store_true",
        help="run again the finished tasks that were not solved (and not invalid)",
    )


def _add_batch_budget(p: argparse.ArgumentParser) -> None:
    """The whole batch's spend."""
    p.add_argument(
        "--batch-max-cost",
        type=_positive_float,
        metavar="USD",
        help="the whole batch's budget: no new task starts once its tasks have spent it",
    )
    p.add_argument(
        "--batch-max-tokens", type=_positive_int, metavar="N", help="the same, in model tokens"
    )


def _add_loop_options(p: argparse.ArgumentParser) -> None:
    """Each task's loop (after its limits)."""
    p.add_argument(
        "--subset",
        choices=("auto", "failing", "affected", "off"),
        help="before the full gate: failing tests, then affected ones (default auto)",
    )
    p.add_argument("--budget", type=_positive_int, help="digest budget in tokens")
    p.add_argument(
        "--on-fail",
        choices=("revert", "keep"),
        help="a task that fails: its branch back to the start, or its commits kept",
    )


def _add_input_format(p: argparse.ArgumentParser) -> None:
    """The aggregate's format; SWE-bench instances and their mirrors."""
    p.add_argument(
        "--format",
        choices=("text", "json", "md", SWE_BENCH),
        default="text",
        help="the aggregate on stdout (also in DIR/summary.json); html: greenloop report --batch; "
        "swe-bench: TASKS is a file of SWE-bench instances (needs --repos; the aggregate as text)",
    )
    p.add_argument(
        "--repos",
        metavar="DIR",
        help="with --format swe-bench: local mirrors of the instances' repositories "
        "(DIR/owner__name, DIR/owner/name or DIR/name, bare or not)",
    )


def add_limits(p: argparse.ArgumentParser) -> None:
    """Each task's loop limits (greenloop batch and bench)."""
    p.add_argument(
        "--max-iters", type=_positive_int, help="agent iterations at most, per task (default 5)"
    )
    p.add_argument("--max-time", type=_positive_float, help="wall-clock seconds per task")
    p.add_argument("--timeout", type=_positive_float, help="seconds per verifier stage")
    p.add_argument("--agent-timeout", type=_positive_float, help="seconds per agent call")
    p.add_argument(
        "--max-cost",
        type=_positive_float,
        metavar="USD",
        help="what one task's agent calls may spend, from the usage the agent reports",
    )
    p.add_argument(
        "--max-tokens", type=_positive_int, metavar="N", help="model tokens per task at most"
    )


def main_batch(args: argparse.Namespace) -> int:
    if args.tasks == "stats":
        return _main_stats(args)
    if args.stats_dir is not None:
        raise FatalError(f"batch takes one TASKS.jsonl, got also {args.stats_dir!r}")
    if not args.out:
        raise FatalError("batch needs --out DIR: where results, records and workspaces go")
    swe_bench = args.format == SWE_BENCH
    if swe_bench and not args.repos:
        raise FatalError(
            "--format swe-bench needs --repos DIR: the local mirrors the instances are cloned from"
        )
    if args.repos and not swe_bench:
        raise FatalError("--repos DIR is for SWE-bench instances: add --format swe-bench")
    from greenloop.batch.report import render_batch
    from greenloop.batch.run import run_batch

    options = dict(
        agent=args.agent,
        executor=args.executor,
        workers=args.workers,
        ray_address=args.ray_address,
        cpus_per_task=args.cpus_per_task,
        max_parallel_agents=args.max_parallel_agents,
        redo=args.redo,
        redo_failed=args.redo_failed,
        overrides={k: getattr(args, k) for k in RUN_OPTIONS},
        max_cost=args.batch_max_cost,
        max_tokens=args.batch_max_tokens,
    )
    if swe_bench:
        from greenloop.batch.swebench import run_swebench

        result = run_swebench(args.tasks, repos=args.repos, out=args.out, **options)
    else:
        result = run_batch(args.tasks, out=args.out, **options)
    shown = "text" if swe_bench else args.format
    sys.stdout.write(render_batch(result.summary, shown, result.out))
    if result.interrupted:
        print("greenloop: interrupted; run the same command again to resume", file=sys.stderr)
    return result.exit_code


def _main_stats(args: argparse.Namespace) -> int:
    from pathlib import Path

    from greenloop.batch.stats import batch_stats, render_stats

    where = args.stats_dir or args.out
    if not where:
        raise FatalError("batch stats needs the batch's DIR: greenloop batch stats DIR")
    fmt = "json" if args.format == "json" else "text"
    sys.stdout.write(render_stats(batch_stats(Path(where).resolve()), fmt))
    return 0


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
    return value

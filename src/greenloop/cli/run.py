"""``greenloop run`` and ``greenloop report``: flags -> Config -> run_loop -> report."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from greenloop.config import load_config
from greenloop.redact import redact
from greenloop.report import render as report

TYPE_CHECKING = False
if TYPE_CHECKING:
    from greenloop.config import Config
    from greenloop.loop.history import LoopResult

RUN_FLAGS = (
    "agent",
    "task",
    "max_iters",
    "max_time",
    "timeout",
    "agent_timeout",
    "max_cost",
    "max_tokens",
    "on_fail",
    "on_regression",
    "allow_test_edits",
    "budget",
    "all_stages",
    "squash",
    "base_url",
    "subset",
    "must_pass",
    "stages_from",
)


def main_run(args: argparse.Namespace) -> int:
    from greenloop import git
    from greenloop.agents.factory import make_agent
    from greenloop.loop.loop import run_loop
    from greenloop.processes.process import watch_output
    from greenloop.report.live import open_display

    cwd = Path(args.repo).resolve()
    root = git.get_root(cwd) or cwd  # from a subdirectory: the configuration of the tree it runs on
    config = load_config(root, {k: getattr(args, k, None) for k in RUN_FLAGS})
    agent = make_agent(config.agent, config)
    _tell_weaker_gate(root, config, args.command)
    interactive = sys.stdin.isatty() and not args.yes
    display = open_display(sys.stderr)
    try:
        with watch_output(display.output):
            result = run_loop(
                root,
                agent,
                config=config,
                command=args.command,
                progress=display.line,
                confirm=_ask if interactive else None,
                phase=display.phase,
            )
    finally:
        display.close()
    data = report.loop_json(result)
    _write_report(report.render_run(data, "md" if args.format == "md" else args.format), result)
    report.append_step_summary(
        report.render_run_markdown(data), os.environ.get("GITHUB_STEP_SUMMARY")
    )
    return result.exit_code


def _tell_weaker_gate(root: Path, config: Config, command: list[str]) -> None:
    from greenloop.detect.sources import detect_cascade
    from greenloop.loop.checking import tell_weaker_gate

    cascade = detect_cascade(root, config, command) if not command else None
    if cascade is not None:
        tell_weaker_gate(root, cascade, config, command)


def _write_report(text: str, result: LoopResult) -> None:
    """The report on stdout; after Ctrl-C under ``| tee`` (the reader got the SIGINT too and is
    gone) on stderr instead, so the summary of a stopped run is never lost (issue 37)."""
    from greenloop.loop.policy import Result

    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        if result.result is not Result.INTERRUPTED:
            raise  # `greenloop run | head -1`: the reader chose to stop reading (exit 141)
        from greenloop.cli.entry import quiet_stdout

        quiet_stdout()
        sys.stderr.write("greenloop: stdout's reader was stopped too; the report:\n" + text)


def main_report(args: argparse.Namespace) -> int:
    text = _report_text(args)
    if args.output:
        Path(args.output).write_text(redact(text), encoding="utf-8")
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _report_text(args: argparse.Namespace) -> str:
    """A run's report, a batch's aggregate (--batch DIR) or a bench's scores (--bench DIR)."""
    from greenloop.loop import record

    if getattr(args, "batch", None):
        from greenloop.batch.report import load_summary, render_batch

        out = Path(args.batch).resolve()
        page_dir = Path(args.output).resolve().parent if args.output else Path.cwd()
        return render_batch(load_summary(out), args.format, out, page_dir)
    if getattr(args, "bench", None):
        from greenloop.bench.report import load_bench, render_bench

        return render_bench(load_bench(Path(args.bench)), args.format)
    data = record.load_report(record.common_dir_of(Path(args.repo).resolve()), args.run_id)
    if args.format == "html":
        from greenloop.report.html import render_html

        return render_html(data)
    return report.render_run(data, args.format)


def _ask(plan: str) -> bool:
    del plan  # already shown as the first progress line
    try:
        answer = input("Start? [Y/n] ").strip().lower()
    except EOFError:  # Ctrl-D at the question, or a terminal with nothing behind it: no
        print(file=sys.stderr)
        return False
    return answer in ("", "y", "yes")

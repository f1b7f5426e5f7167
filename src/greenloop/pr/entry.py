"""``greenloop pr`` from the command line: flags and environment -> run_pr -> outputs -> exit code."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from greenloop.errors import FatalError
from greenloop.pr.forge import Forge, PrContext
from greenloop.pr.result import Action, PrResult
from greenloop.redact import redact

CLIENTS = {"github": "greenloop.pr.github", "gitlab": "greenloop.pr.gitlab"}
RUN_FLAGS = ("agent", "max_iters", "max_time", "max_cost", "max_tokens", "timeout")


def main(args: argparse.Namespace, environ: Mapping[str, str] = os.environ) -> int:
    from greenloop import git
    from greenloop.agents.factory import make_agent
    from greenloop.config import load_config
    from greenloop.pr.flow import run_pr
    from greenloop.processes.process import watch_output
    from greenloop.report.live import open_display

    if args.forge != "gitlab":
        from greenloop.pr.github import own_event

        why = own_event(environ)
        if why:
            skipped = PrResult(result="skipped", exit_code=0, action=Action.NOTHING, reason=why)
            sys.stdout.write(render(skipped, args.format, Path(args.repo)))
            write_outputs(skipped, "", environ)
            return 0
    cwd = Path(args.repo).resolve()
    root = git.get_root(cwd) or cwd
    config = load_config(root, {k: getattr(args, k, None) for k in RUN_FLAGS})
    context, forge = forge_from_env(
        args.forge, environ, base=args.base, need_token=args.comment or args.mode == "pr"
    )
    agent = make_agent(config.agent, config)
    display = open_display(sys.stderr)
    try:
        with watch_output(display.output):
            result = run_pr(
                root, agent, context=context, forge=forge, config=config, mode=args.mode,
                command=args.command, comment=args.comment, progress=display.line,
                phase=display.phase, pr_max_cost=args.pr_max_cost,
                pr_max_attempts=args.pr_max_attempts,
            )  # fmt: skip
    finally:
        display.close()
    markdown = Path(result.report_path).read_text(encoding="utf-8") if result.report_path else ""
    if args.html and result.run_id:
        _write_html(root, result.run_id, Path(args.html))
    sys.stdout.write(render(result, args.format, root))
    write_outputs(result, markdown, environ)
    return result.exit_code


def forge_from_env(
    name: str, environ: Mapping[str, str], *, base: str | None, need_token: bool
) -> tuple[PrContext, Forge | None]:
    """The pull request and its forge's client, from the CI job's environment."""
    if name == "auto":
        name = (
            "gitlab" if environ.get("GITLAB_CI") and not environ.get("GITHUB_ACTIONS") else "github"
        )
    try:
        module = importlib.import_module(CLIENTS[name])
    except ModuleNotFoundError:
        raise FatalError(f"--forge {name}: this greenloop has no {name} client") from None
    found: tuple[PrContext, Forge | None] = module.client_from_env(
        environ, base=base, need_token=need_token
    )
    return found


def render(result: PrResult, fmt: str, root: Path) -> str:
    if fmt == "json":
        data: dict[str, Any] = asdict(result)
        data["report"] = _report_json(root, result.run_id)
        return redact(json.dumps(data, indent=2)) + "\n"
    if not result.run_id:
        return f"greenloop pr: {result.reason}\n"
    from greenloop.pr.comment import pr_view
    from greenloop.report import render as report

    text = report.render_run_text(pr_view(_report_json(root, result.run_id), result.action))
    lines = [
        f"greenloop pr: {result.action.value}" + (f" ({result.branch})" if result.branch else "")
    ]
    lines += [f"  pushed: {' '.join(sha[:10] for sha in result.pushed)}"] if result.pushed else []
    lines += [f"  fix PR: {result.pull_url}"] if result.pull_url else []
    lines += [f"  comment: {result.comment_url}"] if result.comment_url else []
    return text + "\n".join(lines) + "\n"


def _report_json(root: Path, run_id: str) -> dict[str, Any]:
    from greenloop.loop import record

    if not run_id:
        return {}
    data: dict[str, Any] = record.load_report(record.common_dir_of(root), run_id)
    return data


def _write_html(root: Path, run_id: str, path: Path) -> None:
    from greenloop.report.html import render_html

    path.write_text(redact(render_html(_report_json(root, run_id))), encoding="utf-8")
    print(f"wrote {path}", file=sys.stderr)


def write_outputs(result: PrResult, markdown: str, environ: Mapping[str, str]) -> None:
    """``$GITHUB_OUTPUT`` gets result, iterations, action and the report's path; the step summary
    the Markdown report."""
    from greenloop.report import render as report

    outputs = {
        "result": result.result,
        "iterations": str(result.iterations),
        "action": result.action.value,
        "report": result.report_path,
        "pull-url": result.pull_url,
    }
    target = environ.get("GITHUB_OUTPUT")
    if target:
        try:
            with open(target, "a", encoding="utf-8") as f:
                f.write("".join(f"{k}={redact(v)}\n" for k, v in outputs.items()))
        except OSError as exc:
            print(f"greenloop: cannot write $GITHUB_OUTPUT {target}: {exc}", file=sys.stderr)
    if markdown:
        report.append_step_summary(markdown, environ.get("GITHUB_STEP_SUMMARY"))

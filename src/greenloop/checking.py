"""``greenloop check`` and ``greenloop detect``: the verifier once, as a library call and a command."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from greenloop import report
from greenloop.config import Config, load_config
from greenloop.detect import Cascade, detect_cascade
from greenloop.digest import Digest, build_digest
from greenloop.errors import FatalError
from greenloop.verify import CheckResult, run_cascade_parallel

NOTHING_FOUND = (
    "no verifier found in {root}. Give one on the command line (`greenloop check -- pytest -x`), "
    "or configure stages in pyproject.toml:\n\n"
    '  [[tool.greenloop.stage]]\n  name = "test"\n  run = "pytest -x"\n\n'
    "or write `Test command: `pytest -x`` in AGENTS.md."
)


def resolve_cascade(root: Path, config: Config, command: Sequence[str] = ()) -> Cascade:
    cascade = detect_cascade(root, config, command)
    if cascade is None or not cascade.stages:
        raise FatalError(NOTHING_FOUND.format(root=root))
    _log_executables(root, cascade)
    return cascade


def _log_executables(root: Path, cascade: Cascade) -> None:
    """``-v``: which executable each stage will start (the project's venv? a pyenv shim?)."""
    import logging

    from greenloop.process import executable_of, resolve_executable

    log = logging.getLogger("greenloop")
    if log.isEnabledFor(logging.INFO):
        for stage in cascade.stages:
            word = executable_of(stage.command)
            log.info("stage %s: %s -> %s", stage.name, word, resolve_executable(root, word))


def check(
    root: Path | str = ".",
    command: Sequence[str] = (),
    *,
    config: Config | None = None,
    diff: str | None = None,
) -> tuple[CheckResult, Digest]:
    """Run the verifier cascade once and digest the outcome (the library form of ``check``)."""
    root = Path(root).resolve()
    config = config or load_config(root)
    cascade = resolve_cascade(root, config, command)
    result = run_cascade_parallel(
        root, cascade, timeout=config.timeout, all_stages=config.all_stages
    )
    return result, build_digest(result, root=root, budget=config.budget, diff=diff)


def main_check(args: argparse.Namespace) -> int:
    root = Path(args.repo).resolve()
    overrides = {"timeout": args.timeout, "all_stages": args.all_stages, "budget": args.budget}
    config = load_config(root, overrides)
    before = _untracked(root)
    result, digest = check(root, args.command, config=config, diff=_uncommitted_diff(root))
    sys.stdout.write(report.render_check(result, digest, args.format))
    _tell_by_products(root, before)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    report.append_step_summary(report.render_check_markdown(result, digest), summary)
    return result.exit_code


def main_detect(args: argparse.Namespace) -> int:
    root = Path(args.repo).resolve()
    cascade = resolve_cascade(root, load_config(root), args.command)
    sys.stdout.write(report.render_cascade(cascade, args.format))
    return 0


def _untracked(root: Path) -> set[str] | None:
    from greenloop import git

    try:
        return {p for p, code in git.status_paths(root).items() if code == "??"}
    except FatalError:
        return None  # not a git repository: nothing to compare


def _tell_by_products(root: Path, before: set[str] | None) -> None:
    """A verifier that leaves files behind (``cargo`` writes Cargo.lock) makes the tree dirty."""
    from greenloop import checkpoints, git

    after = _untracked(root)
    made = tuple(sorted(after - before)) if before is not None and after is not None else ()
    if made:
        checkpoints.note_by_products(git.common_dir(root), made)
        print(
            f"greenloop: the verifier created {', '.join(made[:10])} (untracked): commit them, or "
            "add them to .gitignore if they are build output; `greenloop run` needs a clean tree",
            file=sys.stderr,
        )


def _uncommitted_diff(root: Path) -> str | None:
    from greenloop import git

    try:
        return git.diff_head(root) or None
    except FatalError:
        return None

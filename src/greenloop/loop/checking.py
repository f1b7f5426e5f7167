"""``greenloop check`` and ``greenloop detect``: the verifier once, as a library call and a command."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from greenloop import signals
from greenloop.config import Config, load_config
from greenloop.detect.sources import detect_cascade
from greenloop.detect.stages import Cascade
from greenloop.errors import FatalError
from greenloop.verify import cache as verify_cache

TYPE_CHECKING = False  # not typing's: the Stop hook imports this on every agent turn (issue 16)
if TYPE_CHECKING:  # imported only once a run happens or a digest is built: a reused run needs none
    import argparse

    from greenloop.digest import Digest
    from greenloop.verify.cascade import CheckResult

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
    if "logging" not in sys.modules:  # nobody configured logging: the Stop hook's usual case
        return
    import logging

    from greenloop.processes.executables import executable_of, resolve_executable

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
    from greenloop.digest import build_digest
    from greenloop.verify.cascade import run_cascade_parallel

    root = Path(root).resolve()
    config = config or load_config(root)
    cascade = resolve_cascade(root, config, command)
    result = run_cascade_parallel(
        root, cascade, timeout=config.timeout, all_stages=config.all_stages
    )
    return result, build_digest(result, root=root, budget=config.budget, diff=diff)


def run_or_reuse(
    root: Path,
    cascade: Cascade,
    config: Config,
    *,
    store: Path | None,
    environ: Mapping[str, str] = os.environ,
) -> CheckResult | verify_cache.Reuse:
    """The cascade's run, or the green run of this exact tree reused from ``store`` (issue 16)."""

    def key_now() -> str | None:
        return verify_cache.compute_key(
            root, cascade, timeout=config.timeout, all_stages=config.all_stages, environ=environ
        )

    key = key_now() if store else None
    if store and key:
        reuse = verify_cache.lookup(store, key, ttl=config.cache_ttl)
        if reuse:
            return reuse
    from greenloop.verify.cascade import run_cascade_parallel

    started = time.time()
    result = run_cascade_parallel(
        root, cascade, timeout=config.timeout, all_stages=config.all_stages, environ=environ
    )
    # remembered only for the tree it saw: a fixer or a test writing files may have changed it
    if store and key and key_now() == key:
        entry = verify_cache.Entry(
            key=key,
            verdict=result.verdict.value,
            at=started,
            duration_s=result.duration_s,
            summary=passed_summary(result),
        )
        output = "\n".join(r.result.merged[-4096:] for r in result.runs)
        verify_cache.record(store, entry, output=output)
    return result


def passed_summary(result: CheckResult) -> str:
    parts = []
    for run in result.runs:
        counts = run.parsed.counts
        ran = f": {counts.passed} passed" if counts.summary_seen and counts.passed else ""
        parts.append(f"{run.stage.name}{ran}")
    return f"({', '.join(parts)}, {result.duration_s:.1f} s)"


def cache_store(root: Path, config: Config, wanted: bool) -> Path | None:
    """The cache directory in the repository's greenloop folder; None when off or outside a git
    repo."""
    from greenloop import git
    from greenloop.cachedir import repo_dir

    if not (wanted and config.cache):
        return None
    try:
        own = repo_dir(git.common_dir(root))
    except FatalError:
        return None
    return own / "cache" if own is not None else None


def main_check(args: argparse.Namespace) -> int:
    from greenloop.digest import build_digest, with_note
    from greenloop.processes.process import watch_output
    from greenloop.report import render as report
    from greenloop.report.live import open_display

    overrides = {
        "timeout": args.timeout,
        "all_stages": args.all_stages,
        "budget": args.budget,
        "stages_from": args.stages_from,
    }
    root, config, cascade = located(Path(args.repo).resolve(), args.command, overrides)
    before = _untracked(root)
    # the edits before the run: a snapshot the verifier writes (jest, vitest) is not the user's
    diff = _uncommitted_diff(root)
    store = cache_store(root, config, wanted=args.cache)
    from greenloop.verify import outcomes  # not on the Stop hook's cache hit

    tree = outcomes.tree_key(root)  # what the tests run on, before they write anything
    display = open_display(sys.stderr)  # a terminal sees a status line tick; a pipe sees nothing
    try:
        # SIGTERM, SIGHUP: the stage and what it started stop too
        with signals.stop_as_interrupt(), watch_output(display.output):
            display.phase("check · " + ", ".join(s.name for s in cascade.stages))
            result = run_or_reuse(root, cascade, config, store=store)
    finally:
        display.close()
    if isinstance(result, verify_cache.Reuse):
        sys.stdout.write(report.render_reuse(result, args.format))
        return 0
    result = outcomes.remember(  # issue 39
        root, result, tree, source="check", real_after=config.flaky_real_after,
        clean_after=config.flaky_clean_after,
    )  # fmt: skip
    digest = with_note(
        build_digest(result, root=root, budget=config.budget, diff=diff),
        outcomes.flaky_note(result),
    )
    sys.stdout.write(report.render_check(result, digest, args.format))
    _tell_by_products(root, before)
    tell_weaker_gate(root, cascade, config, args.command)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    report.append_step_summary(report.render_check_markdown(result, digest), summary)
    return result.exit_code


def tell_weaker_gate(root: Path, cascade: Cascade, config: Config, command: Sequence[str]) -> None:
    """Say once, on stderr, that the project's CI runs a check this gate lacks (issue 38)."""
    if command or config.stages_from != "detect":
        return
    from greenloop.detect.ci_sources import weaker_gate_note

    note = weaker_gate_note(root, cascade)
    if note:
        from greenloop.redact import redact

        print(f"greenloop: {redact(note)}", file=sys.stderr)


def main_detect(args: argparse.Namespace) -> int:
    from greenloop.report import render as report

    overrides = {"stages_from": getattr(args, "stages_from", None)}
    root, _, cascade = located(Path(args.repo).resolve(), args.command, overrides)
    if cascade.workspace is None and cascade.source == "detected":
        # a monorepo whose packages have no verifier of their own: listed, never silently skipped
        from dataclasses import replace

        from greenloop.detect.packages import find_workspace

        cascade = replace(cascade, workspace=find_workspace(root))
    sys.stdout.write(report.render_cascade(cascade, args.format))
    return 0


def located(
    cwd: Path, command: Sequence[str], overrides: Mapping[str, object] | None = None
) -> tuple[Path, Config, Cascade]:
    """The directory to verify, its configuration and its cascade: ``cwd``'s, or its work tree's
    top's when nothing in ``cwd`` says how to verify (``src/``)."""
    config = load_config(cwd, overrides)
    cascade = detect_cascade(cwd, config, command)
    if cascade is not None and cascade.stages:
        _log_executables(cwd, cascade)
        return cwd, config, cascade
    from greenloop import git

    top = git.get_root(cwd) or cwd
    config = load_config(top, overrides) if top != cwd else config
    return top, config, resolve_cascade(top, config, command)


def _untracked(root: Path) -> set[str] | None:
    from greenloop import git

    try:
        return {p for p, code in git.status_paths(root).items() if code == "??"}
    except FatalError:
        return None  # not a git repository: nothing to compare


def _tell_by_products(root: Path, before: set[str] | None) -> None:
    """A verifier that leaves files behind (``cargo`` writes Cargo.lock) makes the tree dirty."""
    from greenloop import git
    from greenloop.loop.preflight import note_by_products

    after = _untracked(root)
    made = tuple(sorted(after - before)) if before is not None and after is not None else ()
    if made:
        # a git dir this user cannot write: only the note is lost
        with contextlib.suppress(OSError):
            note_by_products(git.common_dir(root), made)
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

"""Run a Cascade once: each stage through process -> parsers -> classify."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from greenloop import git
from greenloop.detect.stages import Cascade, Stage
from greenloop.parsers import ParseResult, ParserInput, installed, parse_output
from greenloop.parsers.model import Kind
from greenloop.parsers.path_spellings import root_aliases
from greenloop.parsers.pytest_artifacts import phase_cpu, reruns
from greenloop.processes.process import ProcessResult, build_env, run_command
from greenloop.processes.process_groups import stop_running
from greenloop.verify import instrument
from greenloop.verify.classify import classify
from greenloop.verify.verdict import Classification, Verdict, runs_tests, worst


@dataclass(frozen=True, slots=True, kw_only=True)
class StageRun:
    """One stage run: its process result, what the parsers read, its verdict."""

    stage: Stage
    result: ProcessResult
    parsed: ParseResult
    classification: Classification
    rewritten: tuple[str, ...] = ()
    """Files a fixer stage rewrote on its first pass."""
    env_removed: tuple[str, ...] = ()
    """Agent-detection variables taken out of the stage's environment (``instrument``)."""
    phases: tuple[float, float] | None = None
    """pytest's CPU seconds at its start-up's end and at its collection's (greenloop's plugin)."""
    reruns: tuple[tuple[str, bool], ...] = ()
    """The failed tests pytest ran once more in the same process, and whether each passed then."""

    @property
    def verdict(self) -> Verdict:
        return self.classification.verdict

    @property
    def crashed(self) -> bool:
        """A test runner failed before any test ran (an import error, a throw while loading):
        what it reports is the crash, not a count of failing tests (issue 26: "2 → 1 failing"
        read as progress). A compiler's coded diagnostics (E0308, TS2322) are a count."""
        parsed = self.parsed
        c = parsed.counts
        if self.verdict is not Verdict.FAILED or parsed.tool == "generic" or not runs_tests(parsed):
            return False
        if c.passed or c.failed or c.skipped or c.xfailed or c.xpassed:
            return False
        return all(f.kind in (Kind.BUILD, Kind.CRASH) and not f.code for f in parsed.errors)


EXIT_FLAKY_ONLY = 6
"""``check``: every failure is a test known to be flaky (issue 39)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckResult:
    """One run of the cascade: every stage run, the overall verdict, what was not run."""

    cascade: Cascade
    runs: tuple[StageRun, ...]
    verdict: Verdict
    duration_s: float
    not_run: tuple[str, ...] = ()
    """Stages skipped because an earlier stage failed."""
    known_flaky: tuple[str, ...] = ()
    """Failing tests that passed and failed on one tree before (issue 39): never the first to fix."""
    flaky_only: bool = False
    """Every failure is a known-flaky test: not green, not the code's failure (exit 6)."""

    @property
    def exit_code(self) -> int:
        return EXIT_FLAKY_ONLY if self.flaky_only else self.verdict.exit_code

    @property
    def failing(self) -> StageRun | None:
        """The first stage that is not green."""
        return next((r for r in self.runs if r.verdict is not Verdict.GREEN), None)

    @property
    def rewritten(self) -> tuple[str, ...]:
        return tuple(p for r in self.runs for p in r.rewritten)

    @property
    def crashed(self) -> bool:
        """The failing stage is a test runner that failed before any test ran."""
        failing = self.failing
        return failing is not None and failing.crashed


def run_cascade(
    root: Path,
    cascade: Cascade,
    *,
    timeout: float,
    all_stages: bool = False,
    environ: Mapping[str, str] = os.environ,
    parallel: bool = False,
) -> CheckResult:
    """Fastest first; stop at the first stage that is not green unless ``all_stages``.

    ``parallel``: consecutive read-only stages run concurrently (threads: the waiting happens
    outside the GIL). The result is the sequential one: a later stage's run is dropped where the
    sequential cascade would have stopped before it; only ``duration_s`` differs."""
    start = time.monotonic()
    modules = repo_modules(root)

    def one(stage: Stage) -> StageRun:
        return run_stage(
            root, stage, timeout=stage.timeout or timeout, environ=environ, modules=modules
        )

    runs: list[StageRun] = []
    groups = _groups(cascade.stages) if parallel else [[s] for s in cascade.stages]
    for group in groups:
        for run in _run_group(group, one):
            runs.append(run)
            if run.verdict is not Verdict.GREEN and not all_stages:
                not_run = tuple(s.name for s in cascade.stages[len(runs) :])
                return _result(cascade, runs, start, not_run)
    return _result(cascade, runs, start, ())


def run_cascade_parallel(
    root: Path,
    cascade: Cascade,
    *,
    timeout: float,
    all_stages: bool = False,
    environ: Mapping[str, str] = os.environ,
) -> CheckResult:
    """``run_cascade`` with read-only stages (lint, type) side by side (issue 7)."""
    return run_cascade(
        root, cascade, timeout=timeout, all_stages=all_stages, environ=environ, parallel=True
    )


# Stages that only read the tree (issue 7): they may run side by side; fixers never do.
READ_ONLY = frozenset({"lint", "type"})


def _run_group(group: list[Stage], one: Callable[[Stage], StageRun]) -> list[StageRun]:
    if len(group) == 1:
        return [one(group[0])]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=len(group)) as pool:
        futures = [pool.submit(one, stage) for stage in group]
        try:
            return [future.result() for future in futures]
        except BaseException:  # Ctrl-C, SIGTERM reach this thread alone: the stages stop too
            stop_running()  # else the pool waits for them to finish (up to their timeout)
            raise


def _groups(stages: tuple[Stage, ...]) -> list[list[Stage]]:
    """Consecutive read-only, non-fixer stages share a group; every other stage is alone."""
    groups: list[list[Stage]] = []
    for stage in stages:
        alone = stage.fix or stage.name not in READ_ONLY
        if groups and not alone and all(s.name in READ_ONLY and not s.fix for s in groups[-1]):
            groups[-1].append(stage)
        else:
            groups.append([stage])
    return groups


def _result(
    cascade: Cascade, runs: list[StageRun], start: float, not_run: tuple[str, ...]
) -> CheckResult:
    return CheckResult(
        cascade=cascade,
        runs=tuple(runs),
        verdict=worst([r.verdict for r in runs]),
        duration_s=time.monotonic() - start,
        not_run=not_run,
    )


def run_stage(
    root: Path,
    stage: Stage,
    *,
    timeout: float,
    environ: Mapping[str, str] = os.environ,
    modules: frozenset[str] = frozenset(),
) -> StageRun:
    if stage.cwd:  # a monorepo package's stage runs in its folder, as its tool expects (issue 29)
        root, modules = root / stage.cwd, repo_modules(root / stage.cwd)
    env, removed = instrument.without_agent_markers(build_env(environ))
    rewritten: tuple[str, ...] = ()
    first: ProcessResult | None = None
    if stage.fix:  # seed OP-8: pass 1 may rewrite files, only pass 2's exit code counts
        before = _status(root)
        first = run_command(stage.command, cwd=root, timeout_s=timeout, env=env, redacted=True)
        after = _status(root)
        rewritten = tuple(sorted(p for p, code in after.items() if before.get(p) != code))
    result, artifacts = _run_instrumented(root, stage, timeout, env)
    if first is not None and first.escaped:  # what pass 1 left running is reported too
        result = replace(result, escaped=first.escaped + result.escaped)
    parsed = parse_output(
        ParserInput(
            argv=result.argv,
            exit_code=result.exit_code,
            stdout=result.stdout,
            stderr=result.stderr,
            merged=result.merged,
            artifacts=artifacts,
            root=str(root),
            root_aliases=root_aliases(str(root), environ.get("PWD", "")),
        )
    )
    parsed = installed.own_copies(parsed, root, modules)
    verdict = classify(result, parsed, command=stage.display, repo_modules=modules, root=str(root))
    if stage.cwd:
        parsed = from_repo_root(parsed, stage.cwd, root)
    return StageRun(
        stage=stage,
        result=result,
        parsed=parsed,
        classification=verdict,
        rewritten=rewritten,
        env_removed=removed,
        phases=phase_cpu(artifacts),
        reruns=reruns(artifacts),
    )


def from_repo_root(parsed: ParseResult, cwd: str, folder: Path) -> ParseResult:
    """A package's tool names files from its folder: the digest (and the agent) reads them from
    the repository's root (``packages/ui/src/x.ts:3``, not ``src/x.ts:3``). Test ids stay as the
    tool gave them: a re-run of one test runs in the package's folder too."""

    def rooted(path: str) -> str:
        # only a file of the package (never node:internal/…, nor a name the tool made up)
        inside = path and not os.path.isabs(path) and (folder / path).exists()
        return f"{cwd}/{path}" if inside else path

    failures = tuple(
        replace(
            f,
            file=rooted(f.file),
            frames=tuple(replace(fr, file=rooted(fr.file)) for fr in f.frames),
        )
        for f in parsed.failures
    )
    return replace(parsed, failures=failures)


def _run_instrumented(
    root: Path, stage: Stage, timeout: float, env: dict[str, str]
) -> tuple[ProcessResult, tuple[tuple[str, str], ...]]:
    """Run with structured-output side channels (instrument.py); plain again if they broke it."""
    inst = instrument.prepare(stage.argv, root, env)
    try:
        result = run_command(
            instrument.command(stage.command, inst),
            cwd=root,
            timeout_s=timeout,
            env=env | dict(inst.env),
            redacted=True,
        )
        if instrument.spoiled(inst, result.merged):
            plain = run_command(stage.command, cwd=root, timeout_s=timeout, env=env, redacted=True)
            return replace(plain, escaped=result.escaped + plain.escaped), ()
        return result, instrument.collect(inst)
    finally:
        instrument.cleanup(inst)


def _status(root: Path) -> dict[str, str]:
    try:
        return git.status_paths(root)
    except Exception:  # not a git repo: fixers can't report what they rewrote
        return {}


def repo_modules(root: Path) -> frozenset[str]:
    """Top-level importable names the repository itself provides (root and src/)."""
    names: set[str] = set()
    for base in (root, root / "src"):
        try:
            entries = list(os.scandir(base))
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if _is_dir(entry):
                names.add(entry.name)
            elif entry.name.endswith(".py"):
                names.add(entry.name[:-3])
    return frozenset(names)


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:  # a committed symlink loop (ELOOP) is not a module
        return False

"""The loop's verification step (issue 7): the failing tests first, the full cascade as the gate,
and failing tests re-run once on their own so a flaky one is never the agent's target."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import replace

from greenloop import subset
from greenloop.classify import Verdict
from greenloop.detect import Cascade, Stage
from greenloop.flaky import failing_test_ids, flipped, without_flaky
from greenloop.parsers.model import Failure
from greenloop.session import RunState
from greenloop.verify import CheckResult, StageRun, run_cascade, run_cascade_parallel, run_stage


def verify_step(
    run: RunState, iteration: int, files: tuple[str, ...], *, full: bool
) -> tuple[CheckResult, bool]:
    """The failing tests first; only when they all pass, the full cascade as the gate.

    Returns the result and whether it came from the subset (then it is a failure: success is only
    ever decided on a full run)."""
    start = time.monotonic()
    run.last_packages = ""
    plan = None if full else _subset_plan(run, files)
    passed: set[str] = set()
    if plan is not None:
        part = _run_subset(run, plan)
        run.rec.event(
            "subset",
            iteration=iteration,
            command=plan.stage.display,
            tests=list(plan.ids),
            files=list(plan.files),
            verdict=part.verdict.value,
            seconds=round(part.duration_s, 3),
        )
        new = [i for i in failing_test_ids(part.failing) if i not in run.targets]
        part = _settle(run, part, new)  # the reverse flip: passed in the last full run
        if part.verdict is Verdict.FAILED:
            run.targets |= _test_failures(part)
            return replace(part, duration_s=time.monotonic() - start), True
        if part.verdict is Verdict.GREEN:
            passed = {*plan.ids, *plan.files}
    scoped = None if full or not iteration else _affected_packages(run, iteration, files)
    if scoped is not None and scoped.verdict is not Verdict.GREEN:  # the gate waits for them green
        run.targets = _test_failures(scoped)
        return replace(scoped, duration_s=time.monotonic() - start), True
    check = run_cascade_parallel(
        run.state.root, run.cascade, timeout=run.config.timeout, all_stages=run.config.all_stages
    )
    ids = failing_test_ids(check.failing)
    if run.config.subset == "auto":
        # baseline: every failing test once more; later: those that just passed in the subset
        suspects = (
            ids if iteration == 0 else [i for i in ids if i in passed or _file_of(i) in passed]
        )
        check = _settle(run, check, suspects)
    run.targets = _test_failures(check)
    return replace(check, duration_s=time.monotonic() - start), False


def _affected_packages(run: RunState, iteration: int, files: tuple[str, ...]) -> CheckResult | None:
    """A monorepo's iteration: the packages the edit changed and their dependents (issue 29);
    None when that is every package (a root-level file) or the cascade is one project's."""
    from greenloop.packages import affected_cascade

    scope = affected_cascade(run.cascade, files, root=run.state.root)
    if scope is None:
        return None
    run.last_packages = scope.describe()
    run.progress(f"iter {iteration} · packages: {run.last_packages}")
    if scope.every:
        return None
    part = run_cascade_parallel(
        run.state.root, scope.cascade, timeout=run.config.timeout, all_stages=run.config.all_stages
    )
    run.rec.event(
        "packages",
        iteration=iteration,
        changed=list(scope.changed),
        ran=[{"package": n, "why": why} for n, why in scope.packages],
        verdict=part.verdict.value,
        seconds=round(part.duration_s, 3),
    )
    return part


def _subset_plan(run: RunState, files: tuple[str, ...]) -> subset.Subset | None:
    last = run.last_check
    if run.config.subset != "auto" or last is None or last.verdict is not Verdict.FAILED:
        return None
    bad = [r for r in last.runs if r.verdict is not Verdict.GREEN]
    stage = _cascade_stage(run, bad[0].stage.name) if len(bad) == 1 else None
    targets = list(run.targets.values())
    if stage is None or not targets:
        return None
    touched = subset.touched_test_files(files)
    return subset.narrow(
        stage,
        targets,
        tool=bad[0].parsed.tool,
        touched=touched,
        fail_fast=len(targets) == 1 and not touched,  # -x must not hide a target or a new test
    )


def _run_subset(run: RunState, plan: subset.Subset, *, timeout: float | None = None) -> CheckResult:
    started = time.monotonic()
    stage_run = _run_one(run, plan.stage, plan.env, timeout)
    cascade = Cascade(stages=(plan.stage,), source="failing-first")
    return CheckResult(
        cascade=cascade,
        runs=(stage_run,),
        verdict=stage_run.verdict,
        duration_s=time.monotonic() - started,
    )


def _run_one(
    run: RunState, stage: Stage, env: tuple[tuple[str, str], ...], timeout: float | None
) -> StageRun:
    return run_stage(
        run.state.root,
        stage,
        timeout=timeout or stage.timeout or run.config.timeout,
        environ={**os.environ, **dict(env)},
    )


def _settle(run: RunState, check: CheckResult, suspects: Sequence[str]) -> CheckResult:
    """Re-run the suspects once on their own; those that pass are flaky, dropped from ``check``."""
    failing = check.failing
    if suspects and failing is not None and (stage := _cascade_stage(run, failing.stage.name)):
        chosen = [f for f in failing.parsed.errors if f.id in suspects]
        plan = subset.narrow(stage, chosen, tool=failing.parsed.tool, fail_fast=False)
        if plan is not None:
            again = _run_one(run, plan.stage, plan.env, None)
            run.rec.event("flaky_rerun", tests=list(plan.ids), verdict=again.verdict.value)
            for test in flipped(plan.ids, again):
                if test not in run.flaky:
                    run.flaky.append(test)
                    run.warnings.append(f"flaky test: {test} failed, then passed when re-run alone")
                    run.progress(
                        f"flaky: {test} (failed, then passed alone); not the agent's target"
                    )
    filtered = without_flaky(check, run.flaky)
    if filtered.failing is None and filtered.not_run:  # the stages the flaky failure stopped
        rest = Cascade(stages=run.cascade.stages[len(filtered.runs) :], source=check.cascade.source)
        more = run_cascade(run.state.root, rest, timeout=run.config.timeout)
        runs = filtered.runs + more.runs
        filtered = replace(filtered, runs=runs, verdict=more.verdict, not_run=more.not_run)
    return filtered


def _test_failures(check: CheckResult) -> dict[str, Failure]:
    failing = check.failing
    ids = set(failing_test_ids(failing))
    return {f.id: f for f in failing.parsed.errors if f.id in ids} if failing else {}


def _cascade_stage(run: RunState, name: str) -> Stage | None:
    """The configured stage behind ``name`` (a subset run's stage is a narrowed copy)."""
    found = [s for s in run.cascade.stages if s.name == name]
    return found[0] if len(found) == 1 else None


def _file_of(test_id: str) -> str:
    return test_id.split("::", 1)[0]

"""The loop's verification step (issue 7): the failing tests first, the full cascade as the gate,
and failing tests re-run once on their own so a flaky one is never the agent's target."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import replace

from greenloop import git
from greenloop.detect.stages import Cascade, Stage
from greenloop.loop import affected_step, ordered, policy
from greenloop.loop.session import RunState
from greenloop.parsers.model import Failure
from greenloop.verify import subset
from greenloop.verify.cascade import (
    CheckResult,
    StageRun,
    run_cascade,
    run_cascade_parallel,
    run_stage,
)
from greenloop.verify.flaky import failing_test_ids, flipped, without_flaky
from greenloop.verify.subset_argv import Subset
from greenloop.verify.verdict import Verdict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from greenloop.verify.acceptance import Acceptance


def verify_step(
    run: RunState, iteration: int, files: tuple[str, ...], *, full: bool
) -> tuple[CheckResult, bool]:
    """The failing tests first; only when they all pass, the full cascade as the gate.

    Returns the result and whether it came from the subset (then it is a failure: success is only
    ever decided on a full run)."""
    start = time.monotonic()
    run.last_ran = ""
    run.last_packages = ""
    _fresh_bytecode(run)
    plan = None if full else _subset_plan(run, files)
    one_run = None if full else ordered.plan(run, iteration, plan)
    if one_run is not None:
        check, narrow = _ordered_gate(run, iteration, one_run)
        return replace(check, duration_s=time.monotonic() - start), narrow
    passed: set[str] = set()
    if plan is not None:
        part = _run_subset(run, plan)
        _ran(run, f"{_tests(len(plan.ids))} failing first: {part.verdict.value}")
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
    if _affected_due(run, iteration, full, plan is not None and bool(passed)):
        hit = _run_affected(run, iteration)
        if hit is not None:
            new = [i for i in failing_test_ids(hit.failing) if i not in run.targets]
            hit = _settle(run, hit, new)  # passed in the last full run: flaky, or the edit's
        if hit is not None and hit.verdict is Verdict.FAILED:
            run.targets |= _test_failures(hit)
            return replace(hit, duration_s=time.monotonic() - start), True
    packages_due = not full and iteration and run.config.subset != "off"
    scoped = _affected_packages(run, iteration, files) if packages_due else None
    if scoped is not None and scoped.verdict is not Verdict.GREEN:  # the gate waits for them green
        run.targets = _test_failures(scoped)
        return replace(scoped, duration_s=time.monotonic() - start), True
    # the map is kept from a green run only, and recording costs 2.4x a pytest run: not at baseline
    # (the loop starts because it is red) nor on a run confirming a stop on a red subset
    check = _full_gate(run, iteration, passed, record=bool(iteration) and not full)
    return replace(check, duration_s=time.monotonic() - start), False


def _fresh_bytecode(run: RunState) -> None:
    """The bytecode of every Python file changed since the last verification is dropped
    (``verify/bytecode.py``): Python would trust a cache entry of the same size and second."""
    from greenloop.verify import bytecode

    root = run.state.root
    if run.verified_head:
        out = git.git(
            root, "diff", "--name-only", "--no-renames", "-z", run.verified_head, check=False
        )
        bytecode.drop_stale(root, [p for p in out.stdout.split("\0") if p])
    run.verified_head = git.rev_parse(root, "HEAD") or ""


def _full_gate(run: RunState, iteration: int, passed: set[str], *, record: bool) -> CheckResult:
    """The whole cascade (recording the affected-tests map when due); failing tests that just
    passed in the subset, or at baseline every failing test, run once more (flaky or not)."""
    record_env = affected_step.recording_env(run) if record else {}
    # at baseline every failing test runs once more: inside the same pytest run, where it can
    rerun = {subset.RERUN_ENV: str(subset.MAX_IDS)} if iteration == 0 else {}
    check = run_cascade_parallel(
        run.state.root,
        run.cascade,
        timeout=run.config.timeout,
        all_stages=_every_stage(run),
        environ={**os.environ, **record_env, **(rerun if run.config.subset != "off" else {})},
    )
    affected_step.keep_recording(run, check, record_env)
    ordered.learn(run, check)
    _ran(run, "the full cascade" + (", recording the affected-tests map" if record_env else ""))
    ids = failing_test_ids(check.failing)
    if run.config.subset != "off":
        # baseline: every failing test once more; later: those that just passed in the subset
        suspects = (
            ids if iteration == 0 else [i for i in ids if i in passed or _file_of(i) in passed]
        )
        check = _settle(run, check, suspects, in_run=iteration == 0)
    run.targets = _test_failures(check)
    return check


def _ordered_gate(
    run: RunState, iteration: int, plan: ordered.OrderedPlan
) -> tuple[CheckResult, bool]:
    """The narrow steps and the gate in one run (``loop/ordered.py``): (the result, whether it
    ended early on a red group, a narrow result the policy confirms on a full run before a stop).

    The run also ends once its failures pass the count the policy compares with (a regression
    whatever the rest does), and re-runs its failed tests in the same process (the flaky check of
    the new ones, without a second start-up)."""
    record_env = affected_step.recording_env(run)
    beat = _count_to_beat(run, plan)
    extra = {subset.RERUN_ENV: str(subset.MAX_IDS)}
    if beat is not None:
        extra[subset.STOP_ABOVE_ENV] = str(beat)
    check = run_cascade_parallel(
        run.state.root,
        run.cascade,
        timeout=run.config.timeout,
        all_stages=_every_stage(run),
        environ={**os.environ, **record_env, **dict(plan.env), **extra},
    )
    ordered.learn(run, check)
    first_red, second_red = ordered.red_groups(check, plan)
    for said in ordered.described(plan, first_red, second_red):
        _ran(run, said)
    over = ordered.over(check, plan, beat)
    if over and not (first_red or second_red):
        _ran(run, f"the rest of the suite: stopped past {beat} failures, more than before")
    _ordered_events(run, iteration, plan, check, first_red, second_red)
    early = first_red or second_red or over
    affected_step.keep_recording(run, check, record_env)  # kept from a green run only
    if early:
        new = [i for i in failing_test_ids(check.failing) if i not in run.targets]
        check = _settle(run, check, new, in_run=True)  # flaky, or the edit's
        if check.verdict is Verdict.FAILED:
            run.targets |= _test_failures(check)
            return check, True
        return _full_gate(run, iteration, set(), record=True), False  # its only failures: flaky
    _ran(run, "the full cascade" + (", recording the affected-tests map" if record_env else ""))
    check = _settle(run, check, ())
    run.targets = _test_failures(check)
    return check, False


def _count_to_beat(run: RunState, plan: ordered.OrderedPlan) -> int | None:
    """The failure count past which the ordered run may stop: the policy's last count, when it
    was this pytest stage's (a lint stage's count is not comparable)."""
    last = run.last_check.failing if run.last_check else None
    if last is None or last.stage.name != plan.stage.name or run.cascade.workspace is not None:
        return None
    return policy.count_to_beat(run.observations)


def _ordered_events(
    run: RunState,
    iteration: int,
    plan: ordered.OrderedPlan,
    check: CheckResult,
    first_red: bool,
    second_red: bool,
) -> None:
    """The narrow steps' events, as when they ran apart (``in_gate``: inside the gate's run)."""
    seconds = round(check.duration_s, 3)
    if plan.targets:
        run.rec.event(
            "subset",
            iteration=iteration,
            command=plan.stage.display,
            tests=list(plan.targets[: plan.target_count]),
            files=list(plan.targets[plan.target_count :]),
            verdict="failed" if first_red else "green",
            seconds=seconds,
            in_gate=True,
        )
    if plan.affected and not first_red:
        run.rec.event(
            "affected",
            iteration=iteration,
            reason=plan.affected_reason,
            command=plan.stage.display,
            tests=list(plan.affected),
            verdict="failed" if second_red else "green",
            seconds=seconds,
            in_gate=True,
        )


def _every_stage(run: RunState) -> bool:
    """A monorepo's run goes on past a failing package (issue 29): the gate is every package, and
    the count the policy compares is every package's, so fixing one package never reads as a
    regression because the next one's failures now show."""
    return run.config.all_stages or run.cascade.workspace is not None


def _affected_packages(run: RunState, iteration: int, files: tuple[str, ...]) -> CheckResult | None:
    """A monorepo's iteration: the packages the edit changed and their dependents (issue 29);
    None when that is every package (a root-level file) or the cascade is one project's."""
    from greenloop.detect.packages import affected_cascade

    scope = affected_cascade(run.cascade, files, root=run.state.root)
    if scope is None:
        return None
    run.last_packages = scope.describe()
    run.progress(f"iter {iteration} · packages: {run.last_packages}")
    if scope.every:
        _ran(run, f"packages: {run.last_packages}")
        return None
    part = run_cascade_parallel(
        run.state.root, scope.cascade, timeout=run.config.timeout, all_stages=_every_stage(run)
    )
    run.rec.event(
        "packages",
        iteration=iteration,
        changed=list(scope.changed),
        ran=[{"package": n, "why": why} for n, why in scope.packages],
        verdict=part.verdict.value,
        seconds=round(part.duration_s, 3),
    )
    _ran(run, f"packages: {run.last_packages}: {part.verdict.value}")
    return part


def _subset_plan(run: RunState, files: tuple[str, ...]) -> Subset | None:
    last = run.last_check
    if run.config.subset not in ("auto", "failing") or last is None:
        return None
    if last.verdict is not Verdict.FAILED:
        return None
    bad = [r for r in last.runs if r.verdict is not Verdict.GREEN]
    stage = _cascade_stage(run, bad[0].stage) if len(bad) == 1 else None
    if stage is None or not run.targets:
        return None
    targets, touched = _in_folder(stage, run.targets.values(), subset.touched_test_files(files))
    return subset.narrow(
        stage,
        targets,
        tool=bad[0].parsed.tool,
        touched=touched,
        fail_fast=len(targets) == 1 and not touched,  # -x must not hide a target or a new test
    )


def _affected_due(run: RunState, iteration: int, full: bool, failing_passed: bool) -> bool:
    """auto: once the failing tests pass; affected: every iteration; the baseline never."""
    if full or iteration == 0 or run.last_check is None:
        return False
    return run.config.subset == "affected" or (run.config.subset == "auto" and failing_passed)


def _run_affected(run: RunState, iteration: int) -> CheckResult | None:
    """The tests the run's edits can break (issue 29); None: nothing to run before the gate."""
    step = affected_step.plan(run)
    run.progress(f"iter {iteration} · affected: {step.reason}")
    if step.subset is None:
        _ran(run, f"affected: {step.reason}")
        run.rec.event("affected", iteration=iteration, reason=step.reason, tests=[])
        return None
    part = _run_subset(run, step.subset)
    run.rec.event(
        "affected",
        iteration=iteration,
        reason=step.reason,
        command=step.subset.stage.display,
        tests=list(step.subset.ids),
        verdict=part.verdict.value,
        seconds=round(part.duration_s, 3),
    )
    _ran(run, f"affected: {step.reason}: {part.verdict.value}")
    return part


def _ran(run: RunState, what: str) -> None:
    """What this verification ran and why, for the iteration's row (issue 29)."""
    run.last_ran = f"{run.last_ran}; {what}" if run.last_ran else what


def _tests(n: int) -> str:
    return f"{n} test{'' if n == 1 else 's'}"


def _run_subset(run: RunState, plan: Subset, *, timeout: float | None = None) -> CheckResult:
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


def _settle(
    run: RunState, check: CheckResult, suspects: Sequence[str], *, in_run: bool = False
) -> CheckResult:
    """Re-run the suspects once on their own; those that pass are flaky, dropped from ``check``.
    ``in_run``: the run itself re-ran its failed tests (``subset.RERUN_ENV``), read instead."""
    failing = check.failing
    # our plugin was in that run (its CPU marks): the re-runs it made, or chose not to make, stand
    if suspects and in_run and failing is not None and failing.phases is not None:
        reran = dict(failing.reruns)
        passed = [t for t in suspects if reran.get(t)]
        verdict = Verdict.FAILED if len(passed) < len(suspects) else Verdict.GREEN
        if reran:
            run.rec.event("flaky_rerun", tests=sorted(reran), verdict=verdict.value, in_run=True)
        _mark_flaky(run, passed)
    elif suspects and failing is not None and (stage := _cascade_stage(run, failing.stage)):
        chosen, _ = _in_folder(stage, [f for f in failing.parsed.errors if f.id in suspects], ())
        plan = subset.narrow(stage, chosen, tool=failing.parsed.tool, fail_fast=False)
        if plan is not None:
            again = _run_one(run, plan.stage, plan.env, None)
            run.rec.event("flaky_rerun", tests=list(plan.ids), verdict=again.verdict.value)
            _mark_flaky(run, flipped(plan.ids, again))
    filtered = without_flaky(check, run.flaky)
    if filtered.failing is None and filtered.not_run:  # the stages the flaky failure stopped
        rest = Cascade(stages=run.cascade.stages[len(filtered.runs) :], source=check.cascade.source)
        more = run_cascade(run.state.root, rest, timeout=run.config.timeout)
        runs = filtered.runs + more.runs
        filtered = replace(filtered, runs=runs, verdict=more.verdict, not_run=more.not_run)
    return filtered


def _mark_flaky(run: RunState, tests: Iterable[str]) -> None:
    for test in tests:
        if test not in run.flaky:
            run.flaky.append(test)
            run.warnings.append(f"flaky test: {test} failed, then passed when re-run alone")
            run.progress(f"flaky: {test} (failed, then passed alone); not the agent's target")


def _test_failures(check: CheckResult) -> dict[str, Failure]:
    failing = check.failing
    ids = set(failing_test_ids(failing))
    return {f.id: f for f in failing.parsed.errors if f.id in ids} if failing else {}


def _cascade_stage(run: RunState, ran: Stage) -> Stage | None:
    """The configured stage behind ``ran`` (a subset run's stage is a narrowed copy); in a
    monorepo every package has its ``test``: its folder tells them apart."""
    found = [s for s in run.cascade.stages if s.name == ran.name and s.cwd == ran.cwd]
    return found[0] if len(found) == 1 else None


def _in_folder(
    stage: Stage, failures: Iterable[Failure], touched: Sequence[str]
) -> tuple[list[Failure], tuple[str, ...]]:
    """A package's stage runs in its folder (issue 29): its failures' files, which the digest
    names from the repository root, and the edit's test files as its tool names them; a test
    file of another package is not this stage's to run."""
    if not stage.cwd:
        return list(failures), tuple(touched)
    prefix = stage.cwd.rstrip("/") + "/"

    def local(path: str) -> str:
        return path[len(prefix) :] if path.startswith(prefix) else path

    mine = [
        replace(
            f, file=local(f.file), frames=tuple(replace(r, file=local(r.file)) for r in f.frames)
        )
        for f in failures
    ]
    return mine, tuple(local(t) for t in touched if t.startswith(prefix))


def _file_of(test_id: str) -> str:
    return test_id.split("::", 1)[0]


# ---- declared acceptance (issue 28 item 4) ----


def judge_declared(
    run: RunState, iteration: int, check: CheckResult
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A full run against the declared tests: (why its green is untrusted, the pass-to-pass
    tests it broke). At baseline, a declaration no edit could meet raises WrongDeclaration."""
    config = run.config
    if not (config.must_pass or config.pass_to_pass):
        return (), ()
    from greenloop.verify import acceptance

    outcomes = [o for r in check.runs for o in r.parsed.outcomes]
    judged = acceptance.judge(config.must_pass, config.pass_to_pass, outcomes)
    run.acceptance = judged
    if iteration == 0:
        run.baseline_acceptance = judged
        _check_declaration(run, check, judged)
        return (), ()
    if check.verdict is Verdict.GREEN:
        return judged.untrusted(), ()
    before = run.baseline_acceptance
    held = {i for i, o in before.pass_to_pass if o == "passed"} if before else set()
    return (), tuple(i for i in judged.broken() if i in held)


def _check_declaration(run: RunState, check: CheckResult, judged: Acceptance) -> None:
    from greenloop.verify import acceptance

    tests = [
        r
        for r in check.runs
        if acceptance.supported(r.stage.argv, run.state.root)
        and r.verdict in (Verdict.FAILED, Verdict.GREEN)
        and not r.crashed
    ]
    if not tests:  # the tests did not run to a verdict (a lint stage failed first, a crash)
        return
    already = [i for i, o in judged.fail_to_pass if o == "passed"]
    if already:
        raise acceptance.WrongDeclaration(
            f"declared fail-to-pass test {', '.join(already)} already passes before any edit: "
            "the declaration is wrong (a fail-to-pass test must fail first)"
        )
    missing = judged.not_run
    if missing and all(_ran_whole(r) for r in tests):
        none = not any(r.parsed.outcomes for r in tests)
        raise acceptance.WrongDeclaration(
            f"declared test {', '.join(missing)} did not run at baseline: "
            + (
                "the verifier reported no per-test results"
                if none
                else "not a test this verifier collects (ids in the runner's form: "
                "tests/test_x.py::test_y for pytest)"
            )
        )
    if missing:
        run.warnings.append(f"declared test {', '.join(missing)} did not run at baseline")
    for test in judged.broken():
        run.warnings.append(f"declared pass-to-pass test {test} fails at baseline")
        run.progress(f"baseline · declared pass-to-pass test {test} fails before any edit")


def _ran_whole(stage: StageRun) -> bool:
    """Every collected test ran (no -x, no crash halfway): a test not seen was never collected."""
    c = stage.parsed.counts
    return c.collected is not None and c.ran + c.skipped >= c.collected

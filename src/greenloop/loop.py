"""The fix loop: baseline -> (agent -> commit -> verify -> decide)* -> finish. The only module that
composes every stage; ``run_loop`` reads as one named call per step."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from greenloop import checkpoints, git, record, subset, trust
from greenloop.agents.base import Agent, AgentOutcome, AgentRequest, Usage
from greenloop.checking import resolve_cascade
from greenloop.classify import Verdict
from greenloop.config import Config
from greenloop.detect import Cascade, Stage
from greenloop.digest import Digest, History, build_digest, signatures_of
from greenloop.flaky import failing_test_ids, flipped, without_flaky
from greenloop.parsers.model import Failure
from greenloop.policy import Action, Decision, Limits, Observation, Result, decide
from greenloop.verify import CheckResult, StageRun, run_cascade, run_cascade_parallel, run_stage

DEFAULT_TASK = (
    "Make the verifier pass by fixing the implementation. Do not edit, skip or delete tests, "
    "and do not change the verifier's configuration."
)
Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Iteration:
    """One row of the run's history; iteration 0 is the baseline."""

    iteration: int
    verdict: str
    failures: int = 0
    errors: int = 0
    killed: int = 0
    delta: int | None = None
    signature: str = ""
    digest_tokens: int = 0
    agent_exit: int | None = None
    agent_s: float = 0.0
    verifier_s: float = 0.0
    commit: str = ""
    files_changed: tuple[str, ...] = ()
    agent_commits: tuple[str, ...] = ()
    rolled_back: bool = False
    reruns: int = 0
    usage: Usage = field(default_factory=Usage)
    summary: str = ""
    subset: bool = False
    """The verdict came from the failing tests only (issue 7); success is never decided on one."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopResult:
    run_id: str
    result: Result
    reason: str
    iterations: int
    max_iters: int
    branch: str
    initial_sha: str
    final_sha: str
    attempt_ref: str
    duration_s: float
    history: tuple[Iteration, ...]
    remaining_failures: tuple[tuple[str, str], ...] = ()
    suspicious: tuple[trust.Finding, ...] = ()
    warnings: tuple[str, ...] = ()
    recommendation: str = ""
    last_digest: str = ""
    record_dir: str = ""
    agent: str = ""
    verifier: tuple[str, ...] = ()
    flaky: tuple[str, ...] = ()
    """Tests that failed and then passed when re-run on their own: never the agent's target."""

    @property
    def exit_code(self) -> int:
        return self.result.exit_code


@dataclass(slots=True)
class _Run:
    """Mutable state of one run, private to this module."""

    state: checkpoints.RepoState
    run_id: str
    agent: Agent
    cascade: Cascade
    config: Config
    rec: record.RunRecord
    progress: Progress
    started: float
    task: str
    observations: list[Observation] = field(default_factory=list)
    history: list[Iteration] = field(default_factory=list)
    last_check: CheckResult | None = None
    last_digest: Digest | None = None
    prev_digest: Digest | None = None
    baseline_collected: int | None = None
    checkpoint: str = ""
    suspicious: tuple[trust.Finding, ...] = ()
    warnings: list[str] = field(default_factory=list)
    targets: dict[str, Failure] = field(default_factory=dict)
    """Failing tests since the last full run: the next failing-first selection."""
    flaky: list[str] = field(default_factory=list)
    last_subset: bool = False


def run_loop(
    repo: Path | str,
    agent: Agent,
    *,
    config: Config,
    command: Sequence[str] = (),
    progress: Progress = lambda line: None,
    confirm: Callable[[str], bool] | None = None,
) -> LoopResult:
    """Run the bounded verify -> fix loop and return the typed result (the library API)."""
    state = checkpoints.preflight(Path(repo).resolve())
    cascade = resolve_cascade(state.root, config, command)
    run = _start(state, agent, cascade, config, progress)
    if confirm is not None and not confirm(plan(run)):
        raise KeyboardInterrupt
    with checkpoints.acquire_lock(state, run.run_id), _sigterm_as_interrupt():
        try:
            decision = verify_baseline(run)
            while decision.action is Action.CONTINUE:
                decision = iterate(run, decision)
        except KeyboardInterrupt:
            decision = Decision(
                action=Action.STOP,
                result=Result.INTERRUPTED,
                reason="interrupted (Ctrl-C or SIGTERM)",
            )
        return finish(run, decision)


def _start(
    state: checkpoints.RepoState, agent: Agent, cascade: Cascade, config: Config, progress: Progress
) -> _Run:
    run_id = checkpoints.new_run_id()
    rec = record.RunRecord.create(state.common_dir, run_id)
    run = _Run(
        state=state,
        run_id=run_id,
        agent=agent,
        cascade=cascade,
        config=config,
        rec=rec,
        progress=progress,
        started=time.monotonic(),
        task=config.task or DEFAULT_TASK,
        checkpoint=state.initial_sha,
    )
    rec.event(
        "start",
        run_id=run_id,
        branch=state.branch,
        initial_sha=state.initial_sha,
        agent=agent.describe(),
        stages=[s.display for s in cascade.stages],
        max_iters=config.max_iters,
    )
    return run


def plan(run: _Run) -> str:
    stages = "\n".join(f"    {s.name:<8} {s.display}" for s in run.cascade.stages)
    return (
        f"greenloop run {run.run_id} on branch {run.state.branch} ({run.state.initial_sha[:10]})\n"
        f"  verifier ({run.cascade.source}):\n{stages}\n"
        f"  agent: {run.agent.name}: {run.agent.describe()}\n"
        f"  at most {run.config.max_iters} iterations and {run.config.max_time:.0f} s; "
        f"on failure: {run.config.on_fail}"
    )


def verify_baseline(run: _Run) -> Decision:
    run.progress(plan(run))
    check, digest, decision = verify_and_decide(run, iteration=0, files=())
    run.baseline_collected = _counts_of(check)
    _record_iteration(run, _baseline_row(check, digest), check, digest)
    run.progress(
        f"baseline · verify {check.duration_s:.1f} s · {_failing_text(check)} · {decision.reason or 'continue'}"
    )
    return decision


def iterate(run: _Run, previous: Decision) -> Decision:
    n = len(run.history)  # the baseline is history[0]
    budget = _remaining(run)
    if budget <= 0:
        return Decision(
            action=Action.STOP, result=Result.EXHAUSTED, reason="reached the wall-clock cap"
        )
    prompt = build_prompt(run, n)
    by_products = verifier_by_products(run)
    outcome = call_agent(run, n, prompt, timeout_s=min(run.config.agent_timeout, budget))
    commit = commit_iteration(run, n, outcome, exclude=by_products)
    if not outcome.ok:
        row = Iteration(
            iteration=n,
            verdict="agent_failure",
            agent_exit=outcome.exit_code,
            agent_s=outcome.duration_s,
            commit=commit.sha,
            files_changed=commit.files_changed,
            agent_commits=commit.agent_commits,
            usage=outcome.usage,
            summary=outcome.summary,
        )
        _record_iteration(run, row, None, None)
        return Decision(
            action=Action.STOP,
            result=Result.AGENT_FAILURE,
            reason=outcome.error or "the agent failed",
        )
    check, digest, decision = verify_and_decide(run, iteration=n, files=commit.files_changed)
    row = _iteration_row(run, n, check, digest, outcome, commit, decision)
    _record_iteration(run, row, check, digest)
    run.progress(_progress_line(run, row, outcome))
    if decision.rollback:
        rollback_edit(run, n, decision)
    else:
        run.checkpoint = commit.sha
    return decision


def build_prompt(run: _Run, iteration: int) -> str:
    assert run.last_digest is not None
    verifier = " && ".join(s.display for s in run.cascade.stages)
    if iteration == 1:
        return f"{run.task}\n\nThe verifier is `{verifier}`. Its result now:\n\n{run.last_digest.text}\n"
    return run.last_digest.text + "\n"


def call_agent(run: _Run, n: int, prompt: str, *, timeout_s: float) -> AgentOutcome:
    prompt_file = run.rec.write(f"iter-{n}/prompt.md", prompt)
    run.rec.event("agent_start", iteration=n)
    outcome = run.agent.run(
        AgentRequest(
            prompt=prompt,
            repo=run.state.root,
            iteration=n,
            max_iters=run.config.max_iters,
            run_id=run.run_id,
            prompt_file=prompt_file,
            timeout_s=timeout_s,
        )
    )
    run.rec.write(f"iter-{n}/agent.txt", outcome.output)
    run.rec.event(
        "agent_end",
        iteration=n,
        ok=outcome.ok,
        exit_code=outcome.exit_code,
        seconds=round(outcome.duration_s, 3),
        error=outcome.error,
        summary=outcome.summary,
    )
    return outcome


def verifier_by_products(run: _Run) -> tuple[str, ...]:
    """Untracked files before the agent runs came from the verifier (the tree started clean)."""
    return tuple(sorted(p for p, code in git.status_paths(run.state.root).items() if code == "??"))


def commit_iteration(
    run: _Run, n: int, outcome: AgentOutcome, *, exclude: tuple[str, ...] = ()
) -> checkpoints.CommitInfo:
    info = checkpoints.commit_iteration(
        run.state,
        previous_sha=run.checkpoint,
        iteration=n,
        max_iters=run.config.max_iters,
        subject=outcome.summary,
        run_id=run.run_id,
        exclude=exclude,
    )
    run.rec.write(f"iter-{n}/diff.patch", checkpoints.diff_since(run.state, run.checkpoint))
    run.rec.event(
        "commit",
        iteration=n,
        sha=info.sha,
        files=list(info.files_changed),
        agent_commits=list(info.agent_commits),
    )
    return info


def verify_and_decide(
    run: _Run, *, iteration: int, files: tuple[str, ...]
) -> tuple[CheckResult, Digest, Decision]:
    """Run the cascade, judge it, and re-run once when the policy asks (killed, environment flake)."""
    check, digest, obs = _observe(run, iteration, files, rerun=False)
    decision = _decide(run, obs)
    if run.last_subset and (decision.action is Action.STOP or decision.rollback):
        # issue 7: every stop and rollback (stalled, regression, the caps …) is decided on a full run
        run.observations.pop()
        spent = check.duration_s
        check, digest, obs = _observe(run, iteration, files, rerun=False, full=True)
        check = replace(check, duration_s=check.duration_s + spent)
        decision = _decide(run, obs)
    if decision.action is Action.RERUN:
        run.progress(f"iter {iteration} · {decision.reason}")
        check, digest, obs = _observe(run, iteration, files, rerun=True)
        decision = _decide(run, obs)
    run.prev_digest, run.last_check, run.last_digest = run.last_digest, check, digest
    return check, digest, decision


def _observe(
    run: _Run, iteration: int, files: tuple[str, ...], *, rerun: bool, full: bool = False
) -> tuple[CheckResult, Digest, Observation]:
    check, run.last_subset = _verify(run, iteration, files, full=rerun or full)
    digest = build_digest(
        check,
        root=run.state.root,
        budget=run.config.budget,
        diff=_last_diff(run, iteration),
        history=_digest_history(run, check),
    )
    obs = Observation(
        iteration=iteration,
        verdict=check.verdict,
        failing=_failing(check),
        signatures=frozenset(digest.signatures)
        if check.verdict is not Verdict.GREEN
        else frozenset(),
        files_changed=files,
        rerun=rerun,
        env_in_touched_file=_env_in_touched(run, check),
        suspicious=tuple(f.describe() for f in _review(run, check))
        if check.verdict is Verdict.GREEN and iteration
        else (),
    )
    run.observations.append(obs)
    return check, digest, obs


# ---- failing-first runs and flaky tests (issue 7) ----


def _verify(
    run: _Run, iteration: int, files: tuple[str, ...], *, full: bool
) -> tuple[CheckResult, bool]:
    """The failing tests first; only when they all pass, the full cascade as the gate.

    Returns the result and whether it came from the subset (then it is a failure: success is only
    ever decided on a full run)."""
    start = time.monotonic()
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


def _subset_plan(run: _Run, files: tuple[str, ...]) -> subset.Subset | None:
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


def _run_subset(run: _Run, plan: subset.Subset, *, timeout: float | None = None) -> CheckResult:
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
    run: _Run, stage: Stage, env: tuple[tuple[str, str], ...], timeout: float | None
) -> StageRun:
    return run_stage(
        run.state.root,
        stage,
        timeout=timeout or stage.timeout or run.config.timeout,
        environ={**os.environ, **dict(env)},
    )


def _settle(run: _Run, check: CheckResult, suspects: Sequence[str]) -> CheckResult:
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


def _cascade_stage(run: _Run, name: str) -> Stage | None:
    """The configured stage behind ``name`` (a subset run's stage is a narrowed copy)."""
    found = [s for s in run.cascade.stages if s.name == name]
    return found[0] if len(found) == 1 else None


def _file_of(test_id: str) -> str:
    return test_id.split("::", 1)[0]


def _decide(run: _Run, obs: Observation) -> Decision:
    limits = Limits(
        max_iters=run.config.max_iters,
        max_time=run.config.max_time,
        patience=run.config.patience,
        on_regression=run.config.on_regression,
    )
    return decide(run.observations, limits, elapsed=time.monotonic() - run.started)


def _review(run: _Run, check: CheckResult) -> tuple[trust.Finding, ...]:
    """Post-success checks over everything the run changed (seed step 6)."""
    diff = checkpoints.diff_since(run.state, run.state.initial_sha, context=0)
    findings = trust.review_diff(diff, allow_test_edits=run.config.allow_test_edits)
    findings += trust.review_counts(run.baseline_collected, _counts_of(check))
    run.suspicious = trust.dedupe(findings)
    return run.suspicious


def rollback_edit(run: _Run, n: int, decision: Decision) -> None:
    ref = checkpoints.rollback(
        run.state, to_sha=run.checkpoint, keep_ref=checkpoints.attempt_ref(run.run_id, f"iter-{n}")
    )
    run.observations[-1] = replace(run.observations[-1], rolled_back=True)
    run.history[-1] = replace(run.history[-1], rolled_back=True)
    if run.prev_digest is not None:  # the agent now sees the state it is back at, and why
        note = f"Your last edit was reverted: {decision.note}. The tree is back at the previous checkpoint.\n\n"
        run.last_digest = replace(run.prev_digest, text=note + run.prev_digest.text)
    run.rec.event("rollback", iteration=n, to=run.checkpoint, kept=ref, reason=decision.reason)
    run.progress(f"iter {n} · rolled back to {run.checkpoint[:10]} (attempt kept at {ref})")


def finish(run: _Run, decision: Decision) -> LoopResult:
    assert decision.result is not None
    result = decision.result
    attempt = ""
    if result is Result.SUCCESS and run.config.squash and len(run.history) > 1:
        checkpoints.squash(run.state, message=f"greenloop: {decision.reason}", run_id=run.run_id)
    elif not result.passed and run.config.on_fail == "revert" and _moved(run):
        attempt = checkpoints.finish_revert(run.state, run.run_id)
    loop_result = _loop_result(run, decision, attempt)
    from greenloop import report

    run.rec.write_report(report.loop_json(loop_result))
    run.rec.event("finish", result=result.value, reason=decision.reason, attempt_ref=attempt)
    return loop_result


# ---- helpers ----


def _loop_result(run: _Run, decision: Decision, attempt: str) -> LoopResult:
    assert decision.result is not None
    check = run.last_check
    remaining: tuple[tuple[str, str], ...] = ()
    if check is not None and check.failing is not None and not decision.result.passed:
        remaining = tuple((f.id, f.message[:200]) for f in check.failing.parsed.errors[:20])
    return LoopResult(
        run_id=run.run_id,
        result=decision.result,
        reason=decision.reason,
        iterations=len(run.history) - 1,
        max_iters=run.config.max_iters,
        branch=run.state.branch,
        initial_sha=run.state.initial_sha,
        final_sha=_head(run),
        attempt_ref=attempt,
        duration_s=time.monotonic() - run.started,
        history=tuple(run.history),
        remaining_failures=remaining,
        suspicious=run.suspicious if decision.result is Result.SUSPICIOUS_PASS else (),
        warnings=tuple(run.warnings),
        recommendation=recommend(decision.result, attempt),
        last_digest=run.last_digest.text if run.last_digest else "",
        record_dir=str(run.rec.path),
        agent=run.agent.name,
        verifier=tuple(s.display for s in run.cascade.stages),
        flaky=tuple(run.flaky),
    )


RECOMMENDATIONS = {
    Result.SUCCESS: "Review the iteration commits (git log) before you push.",
    Result.EXHAUSTED: "The agent ran out of iterations: read the last digest, then raise --max-iters or give a sharper --task.",
    Result.STALLED: "The agent repeated the same failure: give it a hint in --task, or fix this one by hand.",
    Result.CIRCULAR: "The agent went back and forth between the same failures: the fix needs a decision a human should make.",
    Result.REGRESSION: "The last edit made things worse and was rolled back: inspect the attempt ref.",
    Result.NON_CONVERGENCE: "The failure count stopped falling: look at the remaining failures yourself.",
    Result.ENV_FAILURE: "Fix the environment (see the digest), then run again. The agent was not asked to touch code for it.",
    Result.TIMEOUT: "The verifier timed out twice: look for an infinite loop or raise --timeout.",
    Result.UNRESOLVED: "The verifier was killed (signal/OOM) twice: run it by hand to see why.",
    Result.SUSPICIOUS_PASS: "Green, but the suite was weakened: review each finding before trusting it.",
    Result.AGENT_FAILURE: "The agent command itself failed: check its output in the run record.",
    Result.INTERRUPTED: "Interrupted: nothing was lost; run again when ready.",
}


def recommend(result: Result, attempt: str) -> str:
    text = RECOMMENDATIONS[result]
    if attempt:
        text += f" The attempt is kept: git log {attempt}"
    return text


def _record_iteration(
    run: _Run, row: Iteration, check: CheckResult | None, digest: Digest | None
) -> None:
    run.history.append(row)
    n = row.iteration
    if check is not None:
        run.rec.write(
            f"iter-{n}/verify.log",
            "\n\n".join(f"$ {r.stage.display}\n{r.result.merged}" for r in check.runs),
        )
    if digest is not None:
        run.rec.write(f"iter-{n}/digest.md", digest.text)
    run.rec.event("iteration", **_row_event(row))
    from greenloop import report

    run.rec.write_report(
        report.loop_json(
            _loop_result(
                run,
                Decision(action=Action.STOP, result=Result.INTERRUPTED, reason="in progress"),
                "",
            )
        )
    )


def _row_event(row: Iteration) -> dict[str, object]:
    return {
        "iteration": row.iteration,
        "verdict": row.verdict,
        "failures": row.failures,
        "errors": row.errors,
        "signature": row.signature,
        "commit": row.commit,
        "files": list(row.files_changed),
    }


def _iteration_row(
    run: _Run,
    n: int,
    check: CheckResult,
    digest: Digest,
    outcome: AgentOutcome,
    commit: checkpoints.CommitInfo,
    decision: Decision,
) -> Iteration:
    failing = check.failing
    counts = failing.parsed.counts if failing else None
    prev = next(
        (
            r
            for r in reversed(run.history)
            if not r.rolled_back and r.verdict in ("failed", "green")
        ),
        None,
    )
    now_failing = _failing(check)
    return Iteration(
        iteration=n,
        verdict=check.verdict.value,
        failures=counts.failed
        if counts and counts.summary_seen
        else (now_failing if counts else 0),
        errors=counts.errors if counts else 0,
        killed=len(failing.parsed.killed) if failing else 0,
        delta=(now_failing - (prev.failures + prev.errors))
        if prev is not None and check.verdict in (Verdict.FAILED, Verdict.GREEN)
        else None,
        signature=digest.signature,
        digest_tokens=digest.tokens,
        agent_exit=outcome.exit_code,
        agent_s=round(outcome.duration_s, 3),
        verifier_s=round(check.duration_s, 3),
        commit=commit.sha,
        files_changed=commit.files_changed,
        agent_commits=commit.agent_commits,
        usage=outcome.usage,
        summary=outcome.summary,
        subset=run.last_subset,
    )


def _baseline_row(check: CheckResult, digest: Digest) -> Iteration:
    failing = check.failing
    counts = failing.parsed.counts if failing else None
    return Iteration(
        iteration=0,
        verdict=check.verdict.value,
        failures=_failures_only(check),
        errors=counts.errors if counts else 0,
        killed=len(failing.parsed.killed) if failing else 0,
        signature=digest.signature,
        digest_tokens=digest.tokens,
        verifier_s=round(check.duration_s, 3),
    )


def _failures_only(check: CheckResult) -> int:
    failing = check.failing
    if failing is None:
        return 0
    counts = failing.parsed.counts
    return counts.failed if counts.summary_seen else _failing(check) - counts.errors


def _failing(check: CheckResult) -> int:
    run = check.failing
    if run is None:
        return 0
    counts = run.parsed.counts
    return counts.failing if counts.summary_seen else len(run.parsed.errors) or 1


def _counts_of(check: CheckResult) -> int | None:
    for r in check.runs:
        c = r.parsed.counts
        if c.collected is not None:
            return c.collected
        if c.summary_seen:
            return c.ran + c.skipped
    return None


def _failing_text(check: CheckResult) -> str:
    return (
        "green"
        if check.verdict is Verdict.GREEN
        else f"{_failing(check)} failing ({check.verdict.value})"
    )


def _progress_line(run: _Run, row: Iteration, outcome: AgentOutcome) -> str:
    prev = run.history[-2] if len(run.history) > 1 else None
    before = f"{prev.failures + prev.errors} → " if prev is not None else ""
    now = "green" if row.verdict == "green" else f"{row.failures + row.errors} failing"
    return (
        f"iter {row.iteration}/{run.config.max_iters} · agent {outcome.duration_s:.0f} s · "
        f"verify {row.verifier_s:.1f} s · {before}{now}"
    )


def _digest_history(run: _Run, check: CheckResult) -> History:
    if not run.observations or run.last_digest is None:
        return History(flaky=tuple(run.flaky))
    now = frozenset(signatures_of(check, run.state.root))
    seen = [o for o in run.observations if now and o.signatures == now and not o.rerun]
    earlier: list[str] = []
    for o in seen:
        earlier += [f for f in o.files_changed if f not in earlier]
    return History(
        previous_failing=run.last_digest.failing_ids,
        times_seen=len(seen) + 1 if seen else 0,
        earlier_files=tuple(earlier),
        subset=run.last_subset,
        flaky=tuple(run.flaky),
    )


def _last_diff(run: _Run, iteration: int) -> str | None:
    if iteration == 0:
        return None
    return checkpoints.diff_since(run.state, run.checkpoint, context=0) or None


def _env_in_touched(run: _Run, check: CheckResult) -> bool:
    failing = check.failing
    if failing is None or failing.verdict is not Verdict.ENV_FAILURE:
        return False
    touched = {f for row in run.history for f in row.files_changed}
    text = failing.result.merged
    return any(path in text for path in touched)


def _moved(run: _Run) -> bool:
    return _head(run) != run.state.initial_sha


def _remaining(run: _Run) -> float:
    return run.config.max_time - (time.monotonic() - run.started)


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM stops the run like Ctrl-C: process groups are killed and the result recorded."""

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    try:
        old = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def _head(run: _Run) -> str:
    return git.rev_parse(run.state.root, "HEAD") or run.state.initial_sha

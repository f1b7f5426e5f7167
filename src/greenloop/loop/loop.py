"""The fix loop: baseline -> (agent -> commit -> verify -> decide)* -> finish. The only module that
composes every stage; ``run_loop`` reads as one named call per step."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from greenloop import git, signals
from greenloop.agents.base import Agent, AgentOutcome, AgentRequest
from greenloop.config import Config
from greenloop.detect.stages import Cascade
from greenloop.digest import Digest, History, build_digest, signatures_of
from greenloop.errors import NotStarted
from greenloop.loop import (
    affected_step,
    checkpoints,
    leftovers,
    record,
    rollback,
    spend,
    squash,
    trust,
)
from greenloop.loop.checking import resolve_cascade
from greenloop.loop.gate import judge_declared, verify_step
from greenloop.loop.history import (
    Iteration,
    LoopResult,
    baseline_row,
    collected_of,
    failing_count,
    failing_text,
    recommend,
    row_verdict,
)
from greenloop.loop.policy import Action, Decision, Limits, Observation, Result, decide
from greenloop.loop.preflight import RepoState, note_by_products, preflight
from greenloop.loop.session import Progress, RunState
from greenloop.loop.spend import over_budget, spent_of
from greenloop.processes.orphans import describe
from greenloop.report.wording import plural, verifier_state
from greenloop.verify.cascade import CheckResult, StageRun
from greenloop.verify.classify import Verdict

__all__ = ["DEFAULT_TASK", "Iteration", "LoopResult", "run_loop"]

DEFAULT_TASK = (
    "Make the verifier pass by fixing the implementation. Do not edit, skip or delete tests, "
    "and do not change the verifier's configuration."
)


RULES = "Rules: fix the implementation; do not {edit}skip or delete tests, or change the verifier."


def run_loop(
    repo: Path | str,
    agent: Agent,
    *,
    config: Config,
    command: Sequence[str] = (),
    progress: Progress = lambda line: None,
    confirm: Callable[[str], bool] | None = None,
    phase: Progress = lambda label: None,
) -> LoopResult:
    """Run the bounded verify -> fix loop and return the typed result (the library API)."""
    from greenloop.verify.acceptance import WrongDeclaration, prepare_declared  # issue 28

    state = preflight(Path(repo).resolve())
    cascade = resolve_cascade(state.root, config, command)
    config = prepare_declared(state.root, config, cascade)  # issue 28: declared tests
    run_id = checkpoints.new_run_id()
    text = plan(run_id, state, cascade, agent, config)
    progress(text)
    if confirm is not None and not confirm(text):
        raise NotStarted("not started, nothing touched")  # declined at the pre-flight prompt
    # issue 12: the lock first, so the loser of two simultaneous starts records nothing
    with checkpoints.acquire_lock(state, run_id), signals.stop_as_interrupt():
        run = _start(run_id, state, agent, cascade, config, progress)
        run.phase = phase
        try:
            decision = verify_baseline(run)
            while decision.action is Action.CONTINUE:
                decision = iterate(run, decision)
        except WrongDeclaration as exc:  # at baseline: nothing was changed
            _finish_held(
                run, Decision(action=Action.STOP, result=Result.INTERRUPTED, reason=str(exc))
            )
            raise
        except KeyboardInterrupt as exc:
            decision = Decision(
                action=Action.STOP,
                result=Result.INTERRUPTED,
                reason=f"interrupted during {run.where} ({signals.what_stopped(exc)})",
            )
        except Exception as exc:  # still revert, keep the attempt and report; then crash (70)
            _stop_on_error(run, exc)
            raise
        return _finish_held(run, decision)


def _stop_on_error(run: RunState, exc: Exception) -> None:
    reason = f"stopped by an internal error: {exc!r}"
    _finish_held(run, Decision(action=Action.STOP, result=Result.INTERRUPTED, reason=reason))


def _finish_held(run: RunState, decision: Decision) -> LoopResult:
    """``finish`` whole: a second Ctrl-C must not cut off the revert, the finish event or the
    report (issue 12); the run is stopping anyway, so the extra signal is dropped."""
    with signals.held(redeliver=False):
        return finish(run, decision)


def _start(
    run_id: str,
    state: RepoState,
    agent: Agent,
    cascade: Cascade,
    config: Config,
    progress: Progress,
) -> RunState:
    rec = record.RunRecord.create(state.common_dir, run_id)
    run = RunState(
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


def plan(run_id: str, state: RepoState, cascade: Cascade, agent: Agent, config: Config) -> str:
    """The pre-flight plan (seed 003): what will run, with which limits, on which branch."""
    from greenloop.verify.acceptance import plan_line as declared_line

    stages = "\n".join(f"    {s.name:<8} {s.display}" for s in cascade.stages)
    return (
        f"greenloop run {run_id} on branch {state.branch} ({state.initial_sha[:10]})\n"
        f"  verifier ({cascade.source}):\n{stages}\n"
        + _packages_line(cascade)
        + f"  agent: {agent.name}: {agent.describe()}\n"
        f"  at most {plural(config.max_iters, 'iteration')} and {config.max_time:.0f} s; "
        f"on failure: {config.on_fail}\n"
        + affected_step.plan_line(state, cascade, config.subset)
        + spend.plan_line(
            getattr(agent, "reports_usage", ""),
            max_cost=config.max_cost,
            max_tokens=config.max_tokens,
        )
        + declared_line(config)
    )


def _packages_line(cascade: Cascade) -> str:
    """A monorepo's plan names its packages and which run when (issue 29)."""
    if cascade.workspace is None:
        return ""
    from greenloop.detect.packages import plan_line

    return plan_line(cascade.workspace)


def _enter(run: RunState, where: str) -> None:
    run.where = where
    run.phase(where)


def verify_baseline(run: RunState) -> Decision:
    _enter(run, "baseline")
    check, digest, decision = verify_and_decide(run, iteration=0, files=())
    run.baseline_collected = collected_of(check)
    _record_iteration(run, baseline_row(check, digest), check, digest)
    run.progress(
        f"baseline · verify {check.duration_s:.1f} s · {failing_text(check)} · {decision.reason or 'continue'}"
    )
    return decision


def iterate(run: RunState, previous: Decision) -> Decision:
    n = len(run.history)  # the baseline is history[0]
    budget = _remaining(run)
    if budget <= 0:
        return Decision(
            action=Action.STOP, result=Result.EXHAUSTED, reason="reached the wall-clock cap"
        )
    over = over_budget(
        spent_of([h.usage for h in run.history[1:]]),
        max_cost=run.config.max_cost,
        max_tokens=run.config.max_tokens,
    )
    if over:  # issue 27: checked before the costly call, never after it
        return Decision(action=Action.STOP, result=Result.BUDGET_EXHAUSTED, reason=over)
    prompt = build_prompt(run, n)
    by_products = verifier_by_products(run)
    run.by_products.update(by_products)
    note_outside_edits(run, n)
    _enter(run, f"iter {n}/{run.config.max_iters} · agent")
    run.agent_turn = True
    outcome = call_agent(run, n, prompt, timeout_s=min(run.config.agent_timeout, budget))
    commit = commit_iteration(run, n, outcome, exclude=by_products)
    run.agent_turn = False
    if not outcome.ok:
        row = Iteration(
            iteration=n,
            verdict="agent_failure",
            agent_exit=outcome.exit_code,
            agent_s=outcome.duration_s,
            commit=_made(commit),
            files_changed=commit.files_changed,
            agent_commits=commit.agent_commits,
            usage=outcome.usage,
            summary=outcome.summary,
            output_tail=_tail(outcome.output),
        )
        _record_iteration(run, row, None, None)
        run.progress(
            f"iter {n}/{run.config.max_iters} · agent {outcome.duration_s:.0f} s · agent failed: "
            f"{outcome.error or 'no reason given'}"
        )
        knob = "--agent-timeout" if run.config.agent_timeout <= budget else "--max-time"
        hint = f" (raise {knob} if it needs longer)" if outcome.timed_out else ""
        return Decision(
            action=Action.STOP,
            result=Result.AGENT_FAILURE,
            reason=(outcome.error or "the agent failed") + hint,
        )
    _enter(run, f"iter {n}/{run.config.max_iters} · verify")
    check, digest, decision = verify_and_decide(run, iteration=n, files=commit.files_changed)
    row = _iteration_row(run, n, check, digest, outcome, commit, decision)
    _record_iteration(run, row, check, digest)
    run.progress(_progress_line(run, row, outcome))
    if decision.rollback:
        rollback_edit(run, n, decision)
    else:
        run.checkpoint = commit.sha
    return decision


def build_prompt(run: RunState, iteration: int) -> str:
    assert run.last_digest is not None
    verifier = " && ".join(s.display for s in run.cascade.stages)
    rules = RULES.format(edit="" if run.config.allow_test_edits else "edit, ")
    result = run.last_digest.text
    if run.config.feedback == "raw" and run.last_check is not None:  # the bench's baseline arm
        from greenloop.digest.feedback import raw_feedback

        result = raw_feedback(run.last_check)
    # an agent whose every call is a fresh session (the cline preset) needs the task again
    if iteration == 1 or not run.agent.continues:
        return (
            f"{run.task}\n\nThe verifier is `{verifier}`. Its result now:\n\n{result}\n\n{rules}\n"
        )
    return f"{result}\n\n{rules}\n"  # a stateless agent sees the rules every time


def call_agent(run: RunState, n: int, prompt: str, *, timeout_s: float) -> AgentOutcome:
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
    if outcome.stopped:
        run.warnings.append(f"iteration {n}, the agent: {outcome.stopped}")
    return outcome


def note_outside_edits(run: RunState, n: int) -> None:
    """Tracked files changed since the last checkpoint while the agent was not running.

    After a checkpoint the tree is clean, and a verifier does not edit tracked files (a fixer
    stage aside): such a change is a person's in another terminal. It cannot be told apart from
    the agent's once committed, so the report says where it went (issue 12).
    """
    if any(stage.fix for stage in run.cascade.stages) or not run.history:
        return
    status = git.status_paths(run.state.root)
    changed = sorted(p for p, code in status.items() if code != "??" and p not in run.outside)
    if not changed:
        return
    run.outside.update(changed)
    shown = ", ".join(changed[:8]) + (" …" if len(changed) > 8 else "")
    run.warnings.append(
        f"edited outside the agent's turn (before iteration {n}; another terminal?): {shown}; "
        "committed with the agent's next edit, and kept under the attempt ref on revert"
    )
    run.rec.event("outside_edits", iteration=n, files=changed)


def note_escaped(run: RunState, iteration: int, check: CheckResult) -> None:
    """Processes a verifier stage left outside its process group were stopped: the report says."""
    when = f"iteration {iteration}" if iteration else "the baseline"
    for stage in check.runs:
        if stage.result.escaped:
            run.warnings.append(f"{when}, {stage.stage.name}: {describe(stage.result.escaped)}")


def verifier_by_products(run: RunState) -> tuple[str, ...]:
    """Untracked files before the agent runs came from the verifier (the tree started clean)."""
    made = tuple(sorted(p for p, code in git.status_paths(run.state.root).items() if code == "??"))
    note_by_products(run.state.common_dir, made)
    return made


def commit_iteration(
    run: RunState, n: int, outcome: AgentOutcome, *, exclude: tuple[str, ...] = ()
) -> checkpoints.CommitInfo:
    leftovers.before_commit(run)
    info = checkpoints.commit_iteration(
        run.state,
        previous_sha=run.checkpoint,
        iteration=n,
        max_iters=run.config.max_iters,
        subject=outcome.summary,
        run_id=run.run_id,
        exclude=exclude,
    )
    leftovers.back_on_branch(run)
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
    run: RunState, *, iteration: int, files: tuple[str, ...]
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
        step = f"iter {iteration}" if iteration else "baseline"
        run.progress(f"{step} · {decision.reason}")
        check, digest, obs = _observe(run, iteration, files, rerun=True)
        decision = _decide(run, obs)
    run.prev_check, run.prev_digest = run.last_check, run.last_digest
    run.last_check, run.last_digest = check, digest
    return check, digest, decision


def _observe(
    run: RunState, iteration: int, files: tuple[str, ...], *, rerun: bool, full: bool = False
) -> tuple[CheckResult, Digest, Observation]:
    check, run.last_subset = verify_step(run, iteration, files, full=rerun or full)
    note_escaped(run, iteration, check)
    declared, broke = judge_declared(run, iteration, check) if not run.last_subset else ((), ())
    digest = build_digest(
        check,
        root=run.state.root,
        budget=run.config.budget,
        diff=_last_diff(run, iteration),
        history=_digest_history(run, check),
    )
    obs = Observation(
        iteration=iteration,
        verdict=Verdict.UNTRUSTED if declared else check.verdict,
        failing=failing_count(check),
        signatures=frozenset(digest.signatures)
        if check.verdict is not Verdict.GREEN
        else frozenset(),
        files_changed=files,
        crashed=check.crashed,
        rerun=rerun,
        env_in_touched_file=_env_in_touched(run, check),
        suspicious=tuple(f.describe() for f in _review(run, check))
        if check.verdict is Verdict.GREEN and iteration
        else (),
        untrusted=check.failing.classification.reasons
        if check.verdict is Verdict.UNTRUSTED and check.failing is not None
        else declared,
        broke=broke,
    )
    run.observations.append(obs)
    return check, digest, obs


# ---- failing-first runs and flaky tests (issue 7) ----


def _decide(run: RunState, obs: Observation) -> Decision:
    limits = Limits(
        max_iters=run.config.max_iters,
        max_time=run.config.max_time,
        patience=run.config.patience,
        on_regression=run.config.on_regression,
    )
    return decide(run.observations, limits, elapsed=time.monotonic() - run.started)


def _review(run: RunState, check: CheckResult) -> tuple[trust.Finding, ...]:
    """Post-success checks over everything the run changed (seed step 6)."""
    diff = checkpoints.diff_since(run.state, run.state.initial_sha, context=0)
    findings = trust.review_diff(diff, allow_test_edits=run.config.allow_test_edits)
    findings += trust.review_counts(run.baseline_collected, collected_of(check))
    run.suspicious = trust.dedupe(findings)
    return run.suspicious


def rollback_edit(run: RunState, n: int, decision: Decision) -> None:
    ref = rollback.rollback(
        run.state,
        to_sha=run.checkpoint,
        keep_ref=checkpoints.attempt_ref(run.run_id, f"iter-{n}"),
        exclude=_by_products(run),
    )
    run.observations[-1] = replace(run.observations[-1], rolled_back=True)
    run.history[-1] = replace(run.history[-1], rolled_back=True)
    run.last_check = run.prev_check  # what still fails is the checkpoint's, not the reverted edit's
    if run.prev_digest is not None:  # the agent now sees the state it is back at, and why
        note = f"Your last edit was reverted: {decision.note}. The tree is back at the previous checkpoint.\n\n"
        run.last_digest = replace(run.prev_digest, text=note + run.prev_digest.text)
    run.rec.event("rollback", iteration=n, to=run.checkpoint, kept=ref, reason=decision.reason)
    run.progress(f"iter {n} · rolled back to {run.checkpoint[:10]} (attempt kept at {ref})")


def finish(run: RunState, decision: Decision) -> LoopResult:
    assert decision.result is not None
    if not run.agent_turn:
        note_outside_edits(run, len(run.history))
    result = decision.result
    attempt = ""
    if result is Result.SUCCESS and run.config.squash and len(run.history) > 1:
        squash.squash(run.state, message=f"greenloop: {decision.reason}", run_id=run.run_id)
    elif not result.passed and run.config.on_fail == "revert" and _moved(run):
        attempt = rollback.finish_revert(run.state, run.run_id, _by_products(run))
    elif run.history and run.history[-1].rolled_back:  # the one edit left is under its ref
        attempt = checkpoints.attempt_ref(run.run_id, f"iter-{run.history[-1].iteration}")
    inside = git.dirty_submodules(run.state.root)
    if inside:
        run.warnings.append(
            f"edits inside submodule(s) {', '.join(inside)} are left uncommitted there: "
            "greenloop commits and reverts the superproject only"
        )
    loop_result = _loop_result(run, decision, attempt)
    from greenloop.report import render as report

    run.rec.write_report(report.loop_json(loop_result))
    run.rec.event("finish", result=result.value, reason=decision.reason, attempt_ref=attempt)
    return loop_result


# ---- helpers ----


def _loop_result(run: RunState, decision: Decision, attempt: str) -> LoopResult:
    assert decision.result is not None
    check = run.last_check
    remaining: tuple[tuple[str, str], ...] = ()
    if check is not None and check.failing is not None and not decision.result.passed:
        remaining = tuple((f.id, f.message[:200]) for f in check.failing.parsed.errors[:20])
    return LoopResult(
        run_id=run.run_id,
        result=decision.result,
        reason=decision.reason,
        iterations=max(0, len(run.history) - 1),
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
        recommendation=recommend(
            decision.result,
            attempt,
            iterations=len(run.history) - 1,
            output=str(run.rec.path / f"iter-{len(run.history) - 1}" / "agent.txt"),
            edited=_edited(run),
            weakened=bool(run.suspicious),
            hung=_hung(check),
        )
        + _attempt_note(run, attempt)
        + _kept_note(run, decision.result),
        last_digest=run.last_digest.text if run.last_digest else "",
        record_dir=str(run.rec.path),
        agent=run.agent.name,
        verifier=tuple(s.display for s in run.cascade.stages),
        flaky=tuple(run.flaky),
        acceptance=run.acceptance,
    )


def _record_iteration(
    run: RunState, row: Iteration, check: CheckResult | None, digest: Digest | None
) -> None:
    run.history.append(row)
    n = row.iteration
    if check is not None:
        run.rec.write(
            f"iter-{n}/verify.log",
            "\n\n".join(f"$ {r.stage.display}{_removed(r)}\n{r.result.merged}" for r in check.runs),
        )
    if digest is not None:
        run.rec.write(f"iter-{n}/digest.md", digest.text)
    run.rec.event("iteration", **_row_event(row))
    from greenloop.report import render as report

    run.rec.write_report(
        report.loop_json(
            _loop_result(
                run,
                Decision(action=Action.STOP, result=Result.INTERRUPTED, reason="in progress"),
                "",
            )
        )
    )


def _removed(run: StageRun) -> str:
    """The log says which agent-detection variables the stage ran without."""
    return f"\n(run without {', '.join(run.env_removed)})" if run.env_removed else ""


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
    run: RunState,
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
    now_failing = failing_count(check)
    return Iteration(
        iteration=n,
        verdict=row_verdict(check),
        failures=now_failing  # a monorepo's: every failing package's (issue 29)
        if check.cascade.workspace is not None
        else counts.failed
        if counts and counts.summary_seen
        else (now_failing if counts else 0),
        errors=counts.errors if counts and check.cascade.workspace is None else 0,
        killed=len(failing.parsed.killed) if failing else 0,
        delta=(now_failing - (prev.failures + prev.errors))
        if prev is not None
        and check.verdict in (Verdict.FAILED, Verdict.GREEN)
        and not check.crashed
        else None,
        signature=digest.signature,
        digest_tokens=digest.tokens,
        agent_exit=outcome.exit_code,
        agent_s=round(outcome.duration_s, 3),
        verifier_s=round(check.duration_s, 3),
        commit=_made(commit),
        files_changed=commit.files_changed,
        agent_commits=commit.agent_commits,
        usage=outcome.usage,
        summary=outcome.summary,
        subset=run.last_subset,
        ran=run.last_ran,
    )


def _tail(output: str, lines: int = 8) -> str:
    kept = [line.rstrip()[:200] for line in output.strip().splitlines()]
    return "\n".join(kept[-lines:])


def _made(commit: checkpoints.CommitInfo) -> str:
    """The iteration's commit; empty when neither greenloop nor the agent committed anything."""
    return commit.sha if commit.created or commit.agent_commits else ""


def _progress_line(run: RunState, row: Iteration, outcome: AgentOutcome) -> str:
    prev = run.history[-2] if len(run.history) > 1 else None
    before = (
        f"{verifier_state(prev.verdict, prev.failures + prev.errors)} → "
        if prev is not None
        else ""
    )
    now = verifier_state(row.verdict, row.failures + row.errors, " failing")
    return (
        f"iter {row.iteration}/{run.config.max_iters} · agent {outcome.duration_s:.0f} s · "
        f"verify {row.verifier_s:.1f} s · {before}{now}"
    )


def _digest_history(run: RunState, check: CheckResult) -> History:
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
        only_before_edits=bool(seen) and all(o.iteration == 0 for o in seen),
        # an affected packages' run names its stage (`cd packages/ui && npm test`): not a subset
        subset=run.last_subset and not run.last_packages,
        flaky=tuple(run.flaky),
    )


def _last_diff(run: RunState, iteration: int) -> str | None:
    if iteration == 0:
        return None
    return checkpoints.diff_since(run.state, run.checkpoint, context=0) or None


def _hung(check: CheckResult | None) -> bool:
    """A stage stopped at its time limit after its runner had reported (untrusted, not timed out)."""
    return check is not None and any(
        r.result.timed_out and r.verdict is Verdict.UNTRUSTED for r in check.runs
    )


def _env_in_touched(run: RunState, check: CheckResult) -> bool:
    failing = check.failing
    if failing is None or failing.verdict is not Verdict.ENV_FAILURE:
        return False
    touched = {f for row in run.history for f in row.files_changed}
    text = failing.result.merged
    return any(_names(text, path) for path in touched)


def _names(text: str, path: str) -> bool:
    """``path`` (the repository's) appears in ``text``, not as the tail of an installed copy's
    (``site-packages/pkg/mod.py`` is the stale copy, not the edited ``pkg/mod.py``)."""
    if path not in text:
        return False
    installed = r"(?<!site-packages/)(?<!dist-packages/)(?<!node_modules/)"
    return re.search(installed + re.escape(path), text) is not None


def _moved(run: RunState) -> bool:
    """HEAD moved, or the tree holds edits (an agent stopped mid-call leaves them uncommitted)."""
    if _head(run) != run.state.initial_sha:
        return True
    keep = (*_by_products(run), *run.state.ignored)
    status = git.status_paths(run.state.root).items()
    return any(not (code == "??" and rollback.covered(p, keep)) for p, code in status)


def _by_products(run: RunState) -> tuple[str, ...]:
    return tuple(sorted(run.by_products))


def _attempt_note(run: RunState, attempt: str) -> str:
    """Exactly what the revert moved into the attempt ref, and the command that brings it back."""
    if not attempt:
        return ""
    files = git.diff_names(run.state.root, run.state.initial_sha, attempt)
    shown = ", ".join(files[:8]) + (f" and {len(files) - 8} more" if len(files) > 8 else "")
    return (
        f" Moved there: {len(files)} changed file(s){': ' + shown if files else ''}. "
        f"To bring them back into the tree: {rollback.bring_back_command(run.state.initial_sha, attempt)}"
    )


def _edited(run: RunState) -> bool:
    """The last agent call changed a file (or committed); no call yet counts as an edit."""
    last = run.history[-1] if run.history else None
    return last is None or bool(last.files_changed or last.agent_commits)


def _kept_note(run: RunState, result: Result) -> str:
    """--on-fail keep: the failed attempt's commits are on the branch; how to take them off."""
    if result.passed or run.config.on_fail != "keep" or _head(run) == run.state.initial_sha:
        return ""
    return (
        f" The iteration commits stay on {run.state.branch} (--on-fail keep); "
        f"git reset --keep {run.state.initial_sha[:12]} takes them off."
    )


def _remaining(run: RunState) -> float:
    return run.config.max_time - (time.monotonic() - run.started)


def _head(run: RunState) -> str:
    return git.rev_parse(run.state.root, "HEAD") or run.state.initial_sha

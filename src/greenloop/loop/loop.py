"""The fix loop: baseline -> (agent -> commit -> verify -> decide)* -> finish. The only module that
composes every stage; ``run_loop`` reads as one named call per step."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from greenloop import git, signals
from greenloop.agents.base import Agent, AgentOutcome, AgentRequest
from greenloop.config import Config
from greenloop.detect.stages import Cascade
from greenloop.errors import NotStarted
from greenloop.loop import (
    affected_step,
    checkpoints,
    leftovers,
    record,
    rollback,
    run_result,
    spend,
    squash,
)
from greenloop.loop.checking import resolve_cascade
from greenloop.loop.history import Iteration, LoopResult, baseline_row, collected_of, failing_text
from greenloop.loop.iteration_row import (
    agent_failure_row,
    iteration_row,
    progress_line,
    record_iteration,
)
from greenloop.loop.observe import verify_and_decide
from greenloop.loop.policy import Action, Decision, Result
from greenloop.loop.preflight import RepoState, note_by_products, preflight
from greenloop.loop.session import Progress, RunState
from greenloop.loop.spend import over_budget, spent_of
from greenloop.report.wording import plural

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
    record_iteration(run, baseline_row(check, digest), check, digest)
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
        record_iteration(run, agent_failure_row(n, outcome, commit), None, None)
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
    row = iteration_row(run, n, check, digest, outcome, commit, decision)
    record_iteration(run, row, check, digest)
    run.progress(progress_line(run, row, outcome))
    if decision.rollback:
        rollback_edit(run, n, decision)
    else:
        run.checkpoint = commit.sha
    return decision


def build_prompt(run: RunState, iteration: int) -> str:
    assert run.last_digest is not None
    verifier = run.cascade.display
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


def rollback_edit(run: RunState, n: int, decision: Decision) -> None:
    ref = rollback.rollback(
        run.state,
        to_sha=run.checkpoint,
        keep_ref=checkpoints.attempt_ref(run.run_id, f"iter-{n}"),
        exclude=run_result.by_products(run),
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
        attempt = rollback.finish_revert(run.state, run.run_id, run_result.by_products(run))
    elif run.history and run.history[-1].rolled_back:  # the one edit left is under its ref
        attempt = checkpoints.attempt_ref(run.run_id, f"iter-{run.history[-1].iteration}")
    inside = git.dirty_submodules(run.state.root)
    if inside:
        run.warnings.append(
            f"edits inside submodule(s) {', '.join(inside)} are left uncommitted there: "
            "greenloop commits and reverts the superproject only"
        )
    loop_result = run_result.loop_result(run, decision, attempt)
    from greenloop.report import render as report

    run.rec.write_report(report.loop_json(loop_result))
    run.rec.event("finish", result=result.value, reason=decision.reason, attempt_ref=attempt)
    return loop_result


# ---- helpers ----


def _moved(run: RunState) -> bool:
    """HEAD moved, or the tree holds edits (an agent stopped mid-call leaves them uncommitted)."""
    if run_result.head(run) != run.state.initial_sha:
        return True
    keep = (*run_result.by_products(run), *run.state.ignored)
    status = git.status_paths(run.state.root).items()
    return any(not (code == "??" and rollback.covered(p, keep)) for p, code in status)


def _remaining(run: RunState) -> float:
    return run.config.max_time - (time.monotonic() - run.started)

"""A run's LoopResult, whole or in progress: the report's figures and the notes that tell the
user what is left where (the attempt ref, the kept commits). Built from the run's state only."""

from __future__ import annotations

import time

from greenloop import git
from greenloop.loop import rollback
from greenloop.loop.history import LoopResult, recommend
from greenloop.loop.policy import Decision, Result
from greenloop.loop.session import RunState
from greenloop.verify.cascade import CheckResult
from greenloop.verify.verdict import Verdict


def loop_result(run: RunState, decision: Decision, attempt: str) -> LoopResult:
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
        final_sha=head(run),
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


def _hung(check: CheckResult | None) -> bool:
    """A stage stopped at its time limit after its runner had reported (untrusted, not timed out)."""
    return check is not None and any(
        r.result.timed_out and r.verdict is Verdict.UNTRUSTED for r in check.runs
    )


def by_products(run: RunState) -> tuple[str, ...]:
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
    if result.passed or run.config.on_fail != "keep" or head(run) == run.state.initial_sha:
        return ""
    return (
        f" The iteration commits stay on {run.state.branch} (--on-fail keep); "
        f"git reset --keep {run.state.initial_sha[:12]} takes them off."
    )


def head(run: RunState) -> str:
    return git.rev_parse(run.state.root, "HEAD") or run.state.initial_sha

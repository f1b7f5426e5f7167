"""One iteration's row: built from the check and the agent's outcome, recorded (logs, digest,
event, the in-progress report) and shown as the progress line."""

from __future__ import annotations

from greenloop.agents.base import AgentOutcome
from greenloop.digest import Digest
from greenloop.loop import checkpoints
from greenloop.loop.history import Iteration, failing_count, row_verdict
from greenloop.loop.policy import Action, Decision, Result
from greenloop.loop.run_result import loop_result
from greenloop.loop.session import RunState
from greenloop.report.wording import verifier_state
from greenloop.verify.cascade import CheckResult, StageRun
from greenloop.verify.verdict import Verdict


def record_iteration(
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
            loop_result(
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


def iteration_row(
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


def agent_failure_row(n: int, outcome: AgentOutcome, commit: checkpoints.CommitInfo) -> Iteration:
    """The row of an agent call that failed: no verification ran after it."""
    return Iteration(
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


def _tail(output: str, lines: int = 8) -> str:
    kept = [line.rstrip()[:200] for line in output.strip().splitlines()]
    return "\n".join(kept[-lines:])


def _made(commit: checkpoints.CommitInfo) -> str:
    """The iteration's commit; empty when neither greenloop nor the agent committed anything."""
    return commit.sha if commit.created or commit.agent_commits else ""


def progress_line(run: RunState, row: Iteration, outcome: AgentOutcome) -> str:
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

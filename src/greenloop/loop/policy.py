"""History -> Decision: continue, re-run, roll back, or stop with a Result. Pure: no I/O.

Rows are checked in order; the first that holds wins (issue 4, seed 003's termination table).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from greenloop.report.wording import plural
from greenloop.verify.verdict import Verdict


class Result(StrEnum):
    SUCCESS = "success"
    EXHAUSTED = "exhausted"
    STALLED = "stalled"
    CIRCULAR = "circular"
    REGRESSION = "regression"
    NON_CONVERGENCE = "non_convergence"
    ENV_FAILURE = "env_failure"
    TIMEOUT = "timeout"
    UNRESOLVED = "unresolved"
    SUSPICIOUS_PASS = "suspicious_pass"
    AGENT_FAILURE = "agent_failure"
    BUDGET_EXHAUSTED = "budget_exhausted"
    FLAKY_ONLY = "flaky_only"
    INTERRUPTED = "interrupted"

    @property
    def exit_code(self) -> int:
        return RESULT_EXIT[self]

    @property
    def passed(self) -> bool:
        return self is Result.SUCCESS


RESULT_EXIT = {
    Result.SUCCESS: 0,
    Result.EXHAUSTED: 1,
    Result.STALLED: 1,
    Result.CIRCULAR: 1,
    Result.REGRESSION: 1,
    Result.NON_CONVERGENCE: 1,
    Result.AGENT_FAILURE: 1,
    Result.BUDGET_EXHAUSTED: 1,
    Result.ENV_FAILURE: 3,
    Result.TIMEOUT: 4,
    Result.UNRESOLVED: 4,
    Result.SUSPICIOUS_PASS: 5,
    Result.FLAKY_ONLY: 6,
    Result.INTERRUPTED: 130,
}


class Action(StrEnum):
    CONTINUE = "continue"
    """Call the agent again with the digest."""
    RERUN = "rerun"
    """Run the verifier once more before judging (killed, environment flake)."""
    STOP = "stop"


@dataclass(frozen=True, slots=True, kw_only=True)
class Observation:
    """One verifier outcome as the policy sees it. Iteration 0 is the baseline."""

    iteration: int
    verdict: Verdict
    failing: int = 0
    """Failures + errors; meaningless when killed or timed out."""
    signatures: frozenset[str] = frozenset()
    files_changed: tuple[str, ...] = ()
    """Files this iteration's edit changed (empty for the baseline)."""
    crashed: bool = False
    """A failure before any test ran (an import error): no count, so in no delta."""
    rerun: bool = False
    """This observation is the re-run of the same iteration's verifier."""
    env_in_touched_file: bool = False
    """The environment failure names a file some iteration changed: then it is the code's fault."""
    rolled_back: bool = False
    """This iteration's edit was rolled back (regression with --on-regression continue)."""
    suspicious: tuple[str, ...] = ()
    """Post-success findings (tests weakened, skipped, deleted …), only for green."""
    untrusted: tuple[str, ...] = ()
    """Why an exit-0 result is not trusted (no tests ran, failures in the output …)."""
    broke: tuple[str, ...] = ()
    """Declared pass-to-pass tests (issue 28) that passed at baseline and fail now."""
    flaky_only: bool = False
    """Every failure is a test known to be flaky from earlier runs (issue 39)."""
    partial: bool = False
    """The run stopped early (a red narrow group, or past the count to beat): ``failing`` is
    the least the whole suite would show."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    max_iters: int = 5
    max_time: float = 3600.0
    patience: int = 2
    on_regression: str = "stop"


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    action: Action
    result: Result | None = None
    reason: str = ""
    rollback: bool = False
    """Roll the branch back to the previous checkpoint (the attempt stays reachable)."""
    note: str = ""
    """Framing for the agent's next prompt (the repeat or reverted note)."""


NO_EDIT = "the agent changed no file, so the same failures remain"


def decide(history: Sequence[Observation], limits: Limits, *, elapsed: float = 0.0) -> Decision:
    """Decide what happens after the newest observation in ``history``."""
    obs = history[-1]
    for row in (_killed, _environment, _timeout, _flaky_only, _green):
        decision = row(history, obs)
        if decision is not None:
            return decision
    decision = Decision(action=Action.CONTINUE)
    if obs.iteration > 0:
        for progress_row in (_broke, _regression, _stalled, _circular, _non_convergence):
            found = progress_row(history, obs, limits)
            if found is not None:
                decision = found
                break
    if decision.action is not Action.CONTINUE:
        return decision
    # every way of going on (a rolled-back regression, one more exploratory try) meets the caps
    cap = _budget(obs, limits, elapsed)
    return replace(cap, rollback=decision.rollback, note=decision.note) if cap else decision


def _stop(result: Result, reason: str, **kw: bool | str) -> Decision:
    return Decision(action=Action.STOP, result=result, reason=reason, **kw)  # type: ignore[arg-type]


def _flaky_only(history: Sequence[Observation], obs: Observation) -> Decision | None:
    """Every failure is a test known to be flaky (issue 39): nothing for the agent to fix, and
    not green either."""
    if not obs.flaky_only:
        return None
    return _stop(
        Result.FLAKY_ONLY,
        "only known-flaky tests fail (each passed and failed on one tree before): not green, and "
        "nothing for the agent to fix",
    )


def _killed(history: Sequence[Observation], obs: Observation) -> Decision | None:
    if obs.verdict is not Verdict.KILLED:
        return None
    if not obs.rerun:
        return Decision(action=Action.RERUN, reason="the verifier was killed; re-running it once")
    return _stop(
        Result.UNRESOLVED,
        "the verifier was killed twice: coverage is incomplete, nothing counts as fixed",
    )


def _environment(history: Sequence[Observation], obs: Observation) -> Decision | None:
    if obs.verdict is not Verdict.ENV_FAILURE or obs.env_in_touched_file:
        return None
    if not obs.rerun:
        return Decision(
            action=Action.RERUN,
            reason="environment failure; re-running once in case it was a flake",
        )
    return _stop(
        Result.ENV_FAILURE,
        "an environment failure twice: not the code's fault, so the agent is not asked to fix it",
    )


def _timeout(history: Sequence[Observation], obs: Observation) -> Decision | None:
    if obs.verdict is not Verdict.TIMEOUT:
        return None
    previous = _previous(history)
    if previous is not None and previous.verdict is Verdict.TIMEOUT:
        return _stop(Result.TIMEOUT, "the verifier timed out twice in a row")
    return None  # the first timeout goes to the agent as a timeout digest


def _green(history: Sequence[Observation], obs: Observation) -> Decision | None:
    if obs.verdict is Verdict.UNTRUSTED:
        when = "before any edit" if obs.iteration == 0 else f"after iteration {obs.iteration}"
        why = f": {'; '.join(obs.untrusted)}" if obs.untrusted else ""
        return _stop(Result.SUSPICIOUS_PASS, f"the verifier's green can't be trusted {when}{why}")
    if obs.verdict is not Verdict.GREEN:
        return None
    if obs.iteration == 0:
        return _stop(Result.SUCCESS, "nothing to fix: the verifier is already green")
    if obs.suspicious:
        return _stop(Result.SUSPICIOUS_PASS, "green, but: " + "; ".join(obs.suspicious[:3]))
    return _stop(Result.SUCCESS, f"green after {plural(obs.iteration, 'iteration')}")


def _broke(history: Sequence[Observation], obs: Observation, limits: Limits) -> Decision | None:
    """A declared pass-to-pass test that fails now is a regression whatever the counts say."""
    if not obs.broke:
        return None
    names = ", ".join(obs.broke[:3]) + (
        f" and {len(obs.broke) - 3} more" if len(obs.broke) > 3 else ""
    )
    reason = f"declared pass-to-pass test {names} failed: a regression"
    note = f"it broke the declared pass-to-pass test {names}"
    return _rolled_back(reason, note, limits)


def _rolled_back(reason: str, note: str, limits: Limits) -> Decision:
    """A regression: the edit rolled back, then the loop goes on or stops as configured."""
    if limits.on_regression == "continue":
        return Decision(
            action=Action.CONTINUE,
            reason=reason + "; the edit was rolled back",
            rollback=True,
            note=note,
        )
    return _stop(
        Result.REGRESSION,
        reason + "; rolled back to the previous checkpoint",
        rollback=True,
        note=note,
    )


def _regression(
    history: Sequence[Observation], obs: Observation, limits: Limits
) -> Decision | None:
    previous = _comparable_previous(history)
    if previous is None or not _countable(obs) or obs.failing <= previous.failing:
        return None
    now = f"at least {obs.failing}" if obs.partial else str(obs.failing)
    reason = f"failures rose from {previous.failing} to {now}"
    note = f"it made failures rise from {previous.failing} to {now}"
    return _rolled_back(reason, note, limits)


def _stalled(history: Sequence[Observation], obs: Observation, limits: Limits) -> Decision | None:
    previous = _comparable_previous(history, judged=True)
    if previous is None or not obs.signatures or obs.signatures != previous.signatures:
        return None
    if not obs.files_changed:  # nothing was edited: no new hypothesis to give a try
        return _stop(Result.STALLED, NO_EDIT)
    before = _before(history, previous)
    # case 4: the same error after an edit of other files than the attempt before is exploration;
    # the baseline had no edit, so a first edit that leaves the failures as they were is one too
    explored = set(obs.files_changed) != set(previous.files_changed)
    already_allowed = before is not None and before.signatures == obs.signatures
    if explored and not already_allowed:
        return Decision(
            action=Action.CONTINUE,
            reason="same error, but the edit touched other files: one more try",
        )
    return _stop(
        Result.STALLED, "the same failure twice in a row: the agent is stuck on a wrong hypothesis"
    )


def _circular(history: Sequence[Observation], obs: Observation, limits: Limits) -> Decision | None:
    if not obs.signatures:
        return None
    earlier = [o for o in _comparable(history)[:-2] if o.signatures == obs.signatures]
    if earlier:
        return _stop(
            Result.CIRCULAR,
            f"back to the failures of iteration {earlier[-1].iteration} (A → B → A)",
        )
    return None


def _non_convergence(
    history: Sequence[Observation], obs: Observation, limits: Limits
) -> Decision | None:
    counts = [o.failing for o in _comparable(history) if _countable(o)]
    if len(counts) <= limits.patience:
        return None
    recent = counts[-(limits.patience + 1) :]
    if all(b >= a for a, b in itertools.pairwise(recent)):
        return _stop(
            Result.NON_CONVERGENCE,
            f"the failure count has not fallen for {limits.patience} iterations",
        )
    return None


def _budget(obs: Observation, limits: Limits, elapsed: float) -> Decision | None:
    if obs.iteration >= limits.max_iters:
        return _stop(Result.EXHAUSTED, f"reached the iteration cap ({limits.max_iters})")
    if elapsed >= limits.max_time:
        return _stop(Result.EXHAUSTED, f"reached the wall-clock cap ({limits.max_time:.0f} s)")
    return None


def count_to_beat(history: Sequence[Observation]) -> int | None:
    """The failure count the next observation's regression row compares with: a run may stop as
    soon as its failures pass it (a regression whatever the rest does). None: no such count."""
    rows = [o for o in _comparable(history) if _countable(o)]
    return rows[-1].failing if rows else None


def sure_on_partial(history: Sequence[Observation], decision: Decision) -> bool:
    """A rollback the loop goes on from, decided by the failure count on a run that stopped early:
    the rest of the suite can only add failures, so a full run would decide the same."""
    obs = history[-1]
    previous = _comparable_previous(history)
    return (
        obs.partial
        and decision.rollback
        and decision.action is Action.CONTINUE
        and not obs.broke
        and previous is not None
        and _countable(obs)
        and obs.failing > previous.failing
    )


def _comparable(history: Sequence[Observation]) -> list[Observation]:
    """Observations a delta may use: the latest per iteration, not rolled back."""
    latest: dict[int, Observation] = {}
    for o in history:
        latest[o.iteration] = o
    return [o for o in latest.values() if not o.rolled_back]


def _countable(obs: Observation) -> bool:
    # seed 003: a killed or timed-out suite is excluded from every delta, never counted as fixed
    # nor one that crashed before any test ran: "2 → 1 failing" would read as progress (issue 26)
    return obs.verdict in (Verdict.FAILED, Verdict.GREEN, Verdict.UNTRUSTED) and not obs.crashed


def _comparable_previous(
    history: Sequence[Observation], *, judged: bool = False
) -> Observation | None:
    """The latest earlier row a delta may use; ``judged``: or one that crashed (its failures,
    the same crash again, are a repeat even though they are no count)."""
    rows = _comparable(history)
    for o in reversed(rows[:-1]):
        if _countable(o) or (judged and o.crashed):
            return o
    return None


def _previous(history: Sequence[Observation]) -> Observation | None:
    rows = _comparable(history)
    return rows[-2] if len(rows) >= 2 else None


def _before(history: Sequence[Observation], obs: Observation) -> Observation | None:
    rows = _comparable(history)
    i = rows.index(obs)
    return rows[i - 1] if i > 0 else None

"""The policy as a pure function of the history."""

from __future__ import annotations

from greenloop.loop.policy import (
    Action,
    Limits,
    Observation,
    Result,
    count_to_beat,
    decide,
    sure_on_partial,
)
from greenloop.verify.verdict import Verdict

A = frozenset({"a"})
B = frozenset({"b"})


def obs(i: int, failing: int, sigs: frozenset[str] = A, **kw: object) -> Observation:
    return Observation(iteration=i, verdict=Verdict.FAILED, failing=failing, signatures=sigs, **kw)  # type: ignore[arg-type]


def test_policy_continues_while_failures_fall() -> None:
    assert (
        decide([obs(0, 4), obs(1, 2, B, files_changed=("x.py",))], Limits()).action
        is Action.CONTINUE
    )


def test_policy_stops_when_same_error_twice_after_an_edit_of_the_same_files() -> None:
    history = [obs(0, 4), obs(1, 3, B, files_changed=("x.py",))]
    history.append(obs(2, 3, B, files_changed=("x.py",)))
    assert decide(history, Limits()).result is Result.STALLED


def test_policy_gives_a_first_edit_that_leaves_the_baselines_failures_one_more_try() -> None:
    history = [obs(0, 4), obs(1, 4, A, files_changed=("x.py",))]  # exploring: nothing fixed yet
    d = decide(history, Limits())
    assert d.action is Action.CONTINUE
    assert "one more try" in d.reason
    history.append(obs(2, 4, A, files_changed=("y.py",)))  # the one more try, used
    assert decide(history, Limits()).result is Result.STALLED


def test_policy_allows_one_more_try_when_the_same_error_follows_an_edit_of_other_files() -> None:
    history = [
        obs(0, 4),
        obs(1, 3, B, files_changed=("x.py",)),
        obs(2, 3, B, files_changed=("y.py",)),
    ]
    assert decide(history, Limits()).action is Action.CONTINUE
    history.append(obs(3, 3, B, files_changed=("z.py",)))
    assert decide(history, Limits(patience=5)).result is Result.STALLED


def test_policy_calls_a_b_a_circular() -> None:
    history = [
        obs(0, 4, A),
        obs(1, 4, B, files_changed=("x.py",)),
        obs(2, 4, A, files_changed=("x.py",)),
    ]
    assert decide(history, Limits(patience=5)).result is Result.CIRCULAR


def test_policy_rolls_back_and_stops_on_rising_failures() -> None:
    d = decide([obs(0, 4), obs(1, 5, B, files_changed=("x.py",))], Limits())
    assert (d.result, d.rollback) == (Result.REGRESSION, True)


def test_regression_with_continue_still_meets_the_iteration_cap() -> None:
    d = decide(
        [obs(0, 4), obs(1, 5, B, files_changed=("x.py",))],
        Limits(max_iters=1, on_regression="continue"),
    )
    assert (d.action, d.result, d.rollback) == (Action.STOP, Result.EXHAUSTED, True)


def test_killed_suite_is_rerun_once_and_never_counted_as_fixed() -> None:
    killed = Observation(iteration=1, verdict=Verdict.KILLED, failing=0)
    assert decide([obs(0, 4), killed], Limits()).action is Action.RERUN
    again = Observation(iteration=1, verdict=Verdict.KILLED, failing=0, rerun=True)
    assert decide([obs(0, 4), killed, again], Limits()).result is Result.UNRESOLVED


def test_environment_failure_in_a_file_the_agent_touched_goes_back_to_the_agent() -> None:
    env = Observation(
        iteration=1, verdict=Verdict.ENV_FAILURE, env_in_touched_file=True, failing=1, signatures=B
    )
    assert decide([obs(0, 4), env], Limits()).action is Action.CONTINUE


def test_non_convergence_after_patience_iterations_without_progress() -> None:
    history = [
        obs(0, 4, A),
        obs(1, 3, B, files_changed=("x",)),
        obs(2, 3, frozenset({"c"}), files_changed=("x",)),
    ]
    assert decide(history, Limits(patience=2)).action is Action.CONTINUE
    history.append(obs(3, 3, frozenset({"d"}), files_changed=("x",)))
    assert decide(history, Limits(patience=2)).result is Result.NON_CONVERGENCE


def test_green_with_findings_is_a_suspicious_pass() -> None:
    green = Observation(iteration=1, verdict=Verdict.GREEN, suspicious=("skip added test_x.py:3",))
    assert decide([obs(0, 1), green], Limits()).result is Result.SUSPICIOUS_PASS


def test_second_timeout_in_a_row_stops() -> None:
    t0 = Observation(iteration=0, verdict=Verdict.TIMEOUT)
    assert decide([t0], Limits()).action is Action.CONTINUE
    t1 = Observation(iteration=1, verdict=Verdict.TIMEOUT)
    assert decide([t0, t1], Limits()).result is Result.TIMEOUT


def test_policy_stops_with_no_edit_named_when_the_agent_changed_nothing_after_an_edit() -> None:
    """Doing nothing is no new hypothesis: the "edit touched other files" extra try is not given."""
    history = [obs(0, 4), obs(1, 3, B, files_changed=("x.py",)), obs(2, 3, B)]
    d = decide(history, Limits())
    assert d.result is Result.STALLED
    assert "changed no file" in d.reason


def test_a_crash_before_any_test_ran_is_no_count_of_failures_in_any_delta() -> None:
    crash = frozenset({"import"})
    history = [
        obs(0, 3),
        obs(1, 1, crash, files_changed=("x.py",), crashed=True),  # "1 failing" was the crash
        obs(2, 2, B, files_changed=("x.py",)),
    ]
    assert decide(history, Limits()).action is Action.CONTINUE  # 3 → 2: not a rise from 1


def test_the_same_crash_twice_in_a_row_after_the_same_edit_is_a_stall() -> None:
    crash = frozenset({"import"})
    history = [
        obs(0, 2),
        obs(1, 1, crash, files_changed=("x.py",), crashed=True),
        obs(2, 1, crash, files_changed=("x.py",), crashed=True),
    ]
    assert decide(history, Limits()).result is Result.STALLED


def test_the_count_to_beat_is_the_last_count_not_rolled_back_nor_crashed() -> None:
    assert count_to_beat([]) is None
    assert count_to_beat([obs(0, 4)]) == 4
    history = [obs(0, 4), obs(1, 9, B, rolled_back=True), obs(2, 3, B, crashed=True)]
    assert count_to_beat(history) == 4


def test_a_partial_run_past_the_count_is_a_sure_rollback_only_when_the_loop_goes_on() -> None:
    history = [obs(0, 2), obs(1, 3, B, files_changed=("x.py",), partial=True)]
    going_on = decide(history, Limits(on_regression="continue"))
    assert going_on.rollback
    assert "from 2 to at least 3" in going_on.reason
    assert sure_on_partial(history, going_on)
    stopping = decide(history, Limits())  # a stop's report is decided on a full run
    assert stopping.result is Result.REGRESSION
    assert not sure_on_partial(history, stopping)
    whole = [obs(0, 2), obs(1, 3, B, files_changed=("x.py",))]  # nothing to confirm: not partial
    assert not sure_on_partial(whole, decide(whole, Limits(on_regression="continue")))
    declared = [obs(0, 2), obs(1, 1, B, files_changed=("x.py",), partial=True, broke=("t",))]
    assert not sure_on_partial(declared, decide(declared, Limits(on_regression="continue")))

"""Verify, digest, observe, decide: one verification of the loop, re-run once or widened to a
full run when the policy asks."""

from __future__ import annotations

import re
import time
from dataclasses import replace

from greenloop.digest import Digest, History, build_digest, signatures_of, with_note
from greenloop.loop import checkpoints, trust
from greenloop.loop.gate import judge_declared, verify_step
from greenloop.loop.history import collected_of, failing_count
from greenloop.loop.policy import (
    Action,
    Decision,
    Limits,
    Observation,
    decide,
    sure_on_partial,
)
from greenloop.loop.session import RunState
from greenloop.processes.orphans import describe
from greenloop.verify import outcomes
from greenloop.verify.cascade import CheckResult
from greenloop.verify.verdict import Verdict


def verify_and_decide(
    run: RunState, *, iteration: int, files: tuple[str, ...]
) -> tuple[CheckResult, Digest, Decision]:
    """Run the cascade, judge it, and re-run once when the policy asks (killed, environment flake)."""
    check, digest, obs = _observe(run, iteration, files, rerun=False)
    decision = _decide(run, obs)
    confirm = decision.action is Action.STOP or decision.rollback
    if run.last_subset and confirm and not sure_on_partial(run.observations, decision):
        # issue 7: every stop and rollback (stalled, regression, the caps …) is decided on a full
        # run; but a rollback the loop goes on from, on failures already past the last count, is
        # what the full run would decide too (more tests only add failures): it is not paid for
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
    tree = outcomes.tree_key(run.state.root)  # the iteration's commit: what the tests run on
    check, run.last_subset = verify_step(run, iteration, files, full=rerun or full)
    note_escaped(run, iteration, check)
    check = _remember(run, check, tree)
    declared, broke = judge_declared(run, iteration, check) if not run.last_subset else ((), ())
    digest = build_digest(
        check,
        root=run.state.root,
        budget=run.config.budget,
        diff=_last_diff(run, iteration),
        history=_digest_history(run, check),
    )
    digest = with_note(digest, outcomes.flaky_note(check))
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
        flaky_only=check.flaky_only,
        partial=run.last_subset,
    )
    run.observations.append(obs)
    return check, digest, obs


def _remember(run: RunState, check: CheckResult, tree: str | None) -> CheckResult:
    """Issue 39: this verification's outcomes and the in-run re-run's flips recorded on its tree;
    the tests known to be flaky from every run remembered named, never the agent's first target."""
    if tree is None:
        return check
    from greenloop.cachedir import repo_dir

    own = repo_dir(run.state.common_dir)
    if own is None:
        return check
    flips = tuple(run.flaky[run.flips_recorded :])  # flipped on this verification's tree
    run.flips_recorded = len(run.flaky)
    recorded = outcomes.of_check(check, tree, source="run", full=not run.last_subset, flipped=flips)
    outcomes.record(own, recorded)
    known = outcomes.known_flaky(
        outcomes.read(own),
        real_after=run.config.flaky_real_after,
        clean_after=run.config.flaky_clean_after,
    )
    return outcomes.with_known_flaky(check, known)


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


def note_escaped(run: RunState, iteration: int, check: CheckResult) -> None:
    """Processes a verifier stage left outside its process group were stopped: the report says."""
    when = f"iteration {iteration}" if iteration else "the baseline"
    for stage in check.runs:
        if stage.result.escaped:
            run.warnings.append(f"{when}, {stage.stage.name}: {describe(stage.result.escaped)}")


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

"""Flaky tests (issue 7): a failure that passes when re-run on its own. Pure: no I/O.

``flipped`` reads the re-run; ``without_flaky`` removes known-flaky failures from a result so that
neither the digest's target nor the policy's counts and signatures ever include them.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

from greenloop.parsers.model import Kind
from greenloop.verify.cascade import CheckResult, StageRun
from greenloop.verify.classify import Verdict, worst


def failing_test_ids(run: StageRun | None) -> tuple[str, ...]:
    if run is None:
        return ()
    return tuple(dict.fromkeys(f.id for f in run.parsed.errors if f.kind is Kind.TEST))


def flipped(suspects: Sequence[str], rerun: StageRun) -> tuple[str, ...]:
    """The suspects that passed when re-run on their own; none unless the re-run clearly ran them."""
    counts = rerun.parsed.counts
    if rerun.verdict not in (Verdict.GREEN, Verdict.FAILED) or not counts.summary_seen:
        return ()
    if counts.ran < len(suspects):
        return ()  # some suspect did not run (renamed, not selected): it proves nothing
    still = {f.id for f in rerun.parsed.errors}
    return tuple(s for s in suspects if s not in still)


def without_flaky(check: CheckResult, flaky: Collection[str]) -> CheckResult:
    """``check`` as if the flaky tests had passed; a stage failing only on them turns green."""
    if not flaky:
        return check
    runs = tuple(_drop(r, flaky) for r in check.runs)
    if runs == check.runs:
        return check
    return replace(check, runs=runs, verdict=worst([r.verdict for r in runs]))


def _drop(run: StageRun, flaky: Collection[str]) -> StageRun:
    dropped = [f for f in run.parsed.failures if f.kind is Kind.TEST and f.id in flaky]
    if not dropped or run.verdict is not Verdict.FAILED:
        return run
    kept = tuple(f for f in run.parsed.failures if f not in dropped)
    n = sum(1 for f in dropped if f.severity == "error")
    counts = run.parsed.counts
    counts = replace(counts, failed=max(0, counts.failed - n), passed=counts.passed + n)
    parsed = replace(run.parsed, failures=kept, counts=counts)
    classification = run.classification
    if not parsed.errors and counts.summary_seen and counts.errors == 0:
        names = ", ".join(f.id for f in dropped)
        classification = replace(
            classification,
            verdict=Verdict.GREEN,
            reasons=(*classification.reasons, f"only flaky tests failed: {names}"),
        )
    return replace(run, parsed=parsed, classification=classification)

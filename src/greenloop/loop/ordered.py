"""The narrow steps and the gate in one pytest run: the failing tests first, then the tests the
edits affect, then the rest of the suite; a group with a failure ends the run after its last test.

Run apart, each narrow step paid pytest's start-up again and a green one was then run once more by
the gate: a one-iteration fix cost more than running everything (a red iteration needs only the
first group, a green one needs the whole suite anyway). In one process a red iteration still stops
early (the plugin collects the first group's files only, and the rest once that group passed),
and a green iteration costs one full run. The run also stops once its failures pass the count the
policy compares with (a regression, whatever the rest does). Only for pytest reached by
greenloop's plugin; other runners keep their own narrowed runs before the gate."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from greenloop.detect.stages import Stage
from greenloop.loop import affected_step
from greenloop.loop.history import failing_count_of
from greenloop.loop.session import RunState
from greenloop.verify import subset
from greenloop.verify.cascade import CheckResult
from greenloop.verify.flaky import failing_test_ids
from greenloop.verify.subset_argv import Subset
from greenloop.verify.verdict import Verdict

MAX_COLLECT_S = 2.0
"""CPU seconds of the whole suite's collection up to which the narrow steps run inside the gate."""


@dataclass(frozen=True, slots=True, kw_only=True)
class OrderedPlan:
    """One full run of the cascade whose pytest stage runs ``targets``, then ``affected``, first."""

    stage: Stage
    env: tuple[tuple[str, str], ...]
    targets: tuple[str, ...]
    """The failing tests (node ids) and the test files the edit touched: the first group."""
    affected: tuple[str, ...]
    """The tests the edits can break (node ids, whole files): the second group."""
    affected_reason: str = ""
    target_count: int = 0
    """The failing tests among ``targets`` (the rest are the touched test files)."""


def plan(run: RunState, iteration: int, narrowed: Subset | None) -> OrderedPlan | None:
    """The ordered run of this iteration, or None: the narrow steps run apart (another runner, a
    monorepo, nothing to put first)."""
    mode = run.config.subset
    if iteration == 0 or mode == "off" or run.cascade.workspace is not None:
        return None
    if not run.ordered_pays:
        return None
    targets: tuple[str, ...] = ()
    count = 0
    stage: Stage | None = None
    if narrowed is not None:
        if subset.SELECT_ENV not in dict(narrowed.env):
            return None  # not pytest: its own narrowed run first
        stage, targets = narrowed.stage, (*narrowed.ids, *narrowed.files)
        count = len(narrowed.ids)
    elif mode != "affected":
        return None  # nothing narrowable failed: the gate alone, as before
    affected: tuple[str, ...] = ()
    reason = ""
    if mode in ("auto", "affected"):
        step = affected_step.plan(run)
        picked = step.subset
        if picked is not None and subset.SELECT_ENV in dict(picked.env):
            if stage is None or picked.stage.name == stage.name:
                stage, affected, reason = picked.stage, picked.ids, step.reason
        elif mode == "affected":
            return None  # the affected step has its own kind of run (or none): as before
    if stage is None:
        return None
    env = subset.first(stage, (targets, affected))
    if env is None:
        return None
    return OrderedPlan(
        stage=stage,
        env=env,
        targets=targets,
        affected=affected,
        affected_reason=reason,
        target_count=count,
    )


def learn(run: RunState, check: CheckResult) -> None:
    """After a run that collected the whole suite: whether ordered runs pay in this project. A red
    ordered run collects the whole suite where a narrowed run collects its files only; a green one
    saves the narrowed runs' start-ups (~0.7 s each on dateutil) and the affected tests run twice.
    While collecting everything costs at most ``MAX_COLLECT_S`` of CPU (dateutil: 1.1 s without
    bytecode), a red iteration stays within seconds; networkx's test modules take 7.7 s to import,
    and there the narrowed runs go first, apart."""
    for r in check.runs:
        if r.phases is not None and r.parsed.tool == "pytest":
            start, collected = r.phases
            run.ordered_pays = collected - start <= MAX_COLLECT_S


def red_groups(check: CheckResult, ordered: OrderedPlan) -> tuple[bool, bool]:
    """(the first group failed, the second did): either ended the run early."""
    failing = [
        i for r in check.runs if r.stage.name == ordered.stage.name for i in failing_test_ids(r)
    ]
    first = any(_inside(i, ordered.targets) for i in failing)
    second = not first and any(_inside(i, ordered.affected) for i in failing)
    return first, second


def over(check: CheckResult, ordered: OrderedPlan, beat: int | None) -> bool:
    """The ordered stage's failures passed ``beat``: the run may have stopped there (partial)."""
    if beat is None:
        return False
    runs = [r for r in check.runs if r.stage.name == ordered.stage.name]
    return bool(runs) and runs[0].verdict is Verdict.FAILED and failing_count_of(runs[0]) > beat


def _inside(test: str, entries: Iterable[str]) -> bool:
    """``test`` (a node id, maybe with a subtest's description) is one of ``entries``, or in one."""
    return any(test == e or test.startswith((e + "::", e + " ")) for e in entries)


def described(ordered: OrderedPlan, first_red: bool, second_red: bool) -> list[str]:
    """What ran, in the words of the narrow steps run apart: the iteration's row reads the same."""
    said = []
    if ordered.targets:
        n = ordered.target_count
        said.append(f"{n} test{'' if n == 1 else 's'} failing first: " + _verdict(first_red))
    if ordered.affected and not first_red:
        said.append(f"affected: {ordered.affected_reason}: " + _verdict(second_red))
    return said


def _verdict(red: bool) -> str:
    return "failed" if red else "green"

"""The loop's affected-tests step (issue 29), between the failing tests and the full gate: which
tests the run's edits can break (``affected``), narrowed to the runner's own selection, and the
map's recording on a full run (kept when that run came out green)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from greenloop import cachedir, git
from greenloop.detect.stages import Cascade, Stage
from greenloop.loop.preflight import RepoState
from greenloop.loop.session import RunState
from greenloop.verify import affected, subset
from greenloop.verify.cascade import CheckResult
from greenloop.verify.subset_argv import Subset
from greenloop.verify.verdict import Verdict


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """The affected step of one iteration: a narrowed stage, or why there is none."""

    subset: Subset | None
    reason: str


def plan(run: RunState) -> Plan:
    """The tests the run's edits (since its start) can affect, in the test stage's own runner."""
    if run.cascade.workspace is not None:  # the packages step runs the affected packages next
        return Plan(subset=None, reason="by package (a monorepo: the packages the edit affects)")
    stage, tool = _test_stage(run)
    if stage is None:
        return Plan(subset=None, reason="none: no single test stage to narrow")
    root = run.state.root
    changed = _changed(run)
    if not changed:
        return Plan(subset=None, reason="none: nothing changed since the run started")
    if tool == "js":
        narrowed = subset.related(stage, [c for c in changed if (root / c).exists()])
        if narrowed is None:
            return Plan(subset=None, reason="none: the runner has no related-tests mode here")
        return Plan(subset=narrowed, reason=f"tests related to {_count_files(changed)} (runner)")
    if tool == "go":
        from greenloop.verify import affected_go

        chosen = affected_go.related(stage, changed, root)
        return Plan(subset=chosen.subset, reason=chosen.reason)
    if tool != "pytest":
        return Plan(subset=None, reason=f"none: no affected selection for {tool} yet")
    choice = affected.choose(
        _store(run, stage), root, files=_files(root), changed=changed, command=stage.display
    )
    narrowed = subset.select(stage, choice.tests) if choice.tests else None
    if choice.tests and narrowed is None:
        return Plan(subset=None, reason=f"none: {choice.reason} cannot be passed to this command")
    return Plan(subset=narrowed, reason=choice.reason)


def recording_env(run: RunState) -> dict[str, str]:
    """For a full run: our plugin records the map when there is no usable one, in a run that
    has iterated. Recording costs 2.4x a pytest run: a one-iteration fix, whose gate runs
    anyway, must not pay it (the next run may never iterate); a run whose agent needed more than
    one try is the kind the map pays for. A map the edits drifted from is kept, never re-recorded:
    a drifted file counts as changed in every selection (sound, only wider)."""
    if run.config.subset not in ("auto", "affected") or len(run.history) < 2:
        return {}
    stage, tool = _test_stage(run)
    if stage is not None and tool not in ("pytest", ""):
        return {}
    stage = stage or _only_stage(run)
    if stage is None:
        return {}
    path = _store(run, stage)
    found = affected.load(path, run.state.root, _files(run.state.root), stage.display)
    return {} if isinstance(found, affected.Map) else affected.start_recording(path)


def keep_recording(run: RunState, check: CheckResult, env: Mapping[str, str]) -> None:
    """Store the map recorded by ``check`` when its pytest stage came out green."""
    if not env:
        return
    pytest_runs = [r for r in check.runs if r.parsed.tool == "pytest"]
    only = pytest_runs[0] if len(pytest_runs) == 1 else None
    stage = _cascade_stage(run, only.stage.name) if only else _only_stage(run)
    if stage is None:
        return
    saved = affected.finish_recording(
        _store(run, stage),
        run.state.root,
        green=only is not None and only.verdict is Verdict.GREEN,
        files=_files(run.state.root),
        command=stage.display,
        commit=git.rev_parse(run.state.root, "HEAD") or "",
    )
    if saved:
        run.rec.event("affected_map", stage=stage.name)


def plan_line(state: RepoState, cascade: Cascade, mode: str) -> str:
    """The pre-flight plan's line: what each iteration runs before the gate, and from what."""
    steps = {
        "off": "every iteration runs the full cascade",
        "failing": "the failing tests first, then the full cascade as the gate",
        "affected": "the tests the edits affect first, then the full cascade as the gate",
        "auto": "the failing tests first, then the tests the edits affect, "
        "then the full cascade as the gate",
    }
    line = f"  subset {mode}: {steps.get(mode, steps['auto'])}"
    found = [s for s in cascade.stages if "pytest" in s.display or "py.test" in s.display]
    if mode in ("auto", "affected") and len(found) == 1:
        path = affected.store_path(cachedir.repo_dir(state.common_dir), found[0].name)
        got = affected.load(path, state.root, _files(state.root), found[0].display)
        line += (
            f" (map of {len(got.tests):,} tests from green run {got.commit[:7]})"
            if isinstance(got, affected.Map)
            else f"; {got}: the import graph until then"
        )
    return line + "\n"


def _test_stage(run: RunState) -> tuple[Stage | None, str]:
    last = run.last_check
    runs = [r for r in last.runs if r.parsed.tool in ("pytest", "js", "go")] if last else []
    if len(runs) != 1:
        return None, ""
    return _cascade_stage(run, runs[0].stage.name), runs[0].parsed.tool


def _only_stage(run: RunState) -> Stage | None:
    """Before any run (the baseline): the one stage that names pytest."""
    found = [s for s in run.cascade.stages if "pytest" in s.display or "py.test" in s.display]
    return found[0] if len(found) == 1 else None


def _cascade_stage(run: RunState, name: str) -> Stage | None:
    found = [s for s in run.cascade.stages if s.name == name]
    return found[0] if len(found) == 1 else None


def _store(run: RunState, stage: Stage) -> Path | None:
    return affected.store_path(cachedir.repo_dir(run.state.common_dir), stage.name)


def _changed(run: RunState) -> list[str]:
    root = run.state.root
    committed = git.diff_names(root, run.state.initial_sha, "HEAD")
    pending = git.status_paths(root)
    return sorted({*committed, *pending} - set(run.by_products))


def _files(root: Path) -> tuple[str, ...]:
    out = git.git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").stdout
    return tuple(p for p in out.split("\0") if p)


def _count_files(files: list[str]) -> str:
    return f"{len(files)} changed file{'' if len(files) == 1 else 's'}"

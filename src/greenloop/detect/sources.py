"""Repository -> Cascade, by priority: the command line, the configuration, the agent docs
(AGENTS.md, CLAUDE.md), a monorepo's packages, detection; each stage's time limit says who set it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from greenloop.config import Config
from greenloop.detect.stages import (
    Cascade,
    Stage,
    command_from_args,
    command_from_docs,
    detect_stages,
)

TYPE_CHECKING = False  # not typing's: the Stop hook detects stages on every agent turn
if TYPE_CHECKING:
    from greenloop.detect.ci import CiCommand


def detect_cascade(root: Path, config: Config, command: Sequence[str] = ()) -> Cascade | None:
    """The stages to run, by priority: command line, config, agent docs, detection; with
    ``stages_from`` ``ci`` or ``both``, the project's CI instead or as well (issue 38)."""
    cascade = _find_cascade(root, config, command)
    if not command and config.stages_from != "detect":
        cascade = _with_ci(root, config.stages_from, cascade, first=config.ci_first)
    if cascade is None:
        return None
    return replace(cascade, stages=tuple(_limit_origin(s, config) for s in cascade.stages))


def _with_ci(
    root: Path, stages_from: str, cascade: Cascade | None, *, first: str = ""
) -> Cascade | None:
    """``first``: the failing CI check (``greenloop pr``): its stages run before all others, so
    the loop meets what failed in CI before anything else."""
    from greenloop.detect.ci import read_ci
    from greenloop.errors import FatalError

    reading = read_ci(root)
    failed = tuple(ci_stage(c) for c in reading.commands if c.of_check(first))
    rest = tuple(
        sorted((ci_stage(c) for c in reading.commands if not c.of_check(first)), key=_fastest_first)
    )
    used = dict.fromkeys(s.origin.rpartition(":")[0] for s in (*failed, *rest))
    where = ", ".join(used or reading.files) or "no CI file (.github/workflows/, .gitlab-ci.yml)"
    if stages_from == "ci" or cascade is None:
        if not failed and not rest:
            if stages_from == "ci":
                raise FatalError(_nothing_in_ci(reading.files, where))
            return None
        return Cascade(stages=(*failed, *rest), source=f"CI ({where})", skipped=reading.skipped)
    ahead = Cascade(stages=failed, source="")
    base = lacking(ahead, cascade.stages)  # the detected stages the failed check does not repeat
    extra = lacking(replace(cascade, stages=(*failed, *base)), rest)
    return replace(
        cascade,
        stages=(*failed, *base, *extra),
        source=f"{cascade.source} + CI ({where})" if failed or extra else cascade.source,
        skipped=reading.skipped,
    )


def _nothing_in_ci(files: Sequence[str], where: str) -> str:
    if files:
        return (
            f"--stages-from ci: {where} runs no verification command greenloop can take "
            "(`greenloop detect --stages-from ci` lists what was skipped and why)"
        )
    return f"--stages-from ci: {where} here"


def _fastest_first(stage: Stage) -> int:
    from greenloop.detect.stages import ORDER

    return ORDER.index(stage.name) if stage.name in ORDER else len(ORDER)


def ci_stage(command: CiCommand) -> Stage:
    return Stage(
        name=command.kind,
        command=command.command,
        why=f"CI job {command.job} ({command.origin})",
        cwd=command.cwd,
        origin=command.origin,
    )


def lacking(cascade: Cascade, derived: Sequence[Stage]) -> tuple[Stage, ...]:
    """The CI stages whose check (the tool, or the script it names) no local stage runs."""
    from greenloop.detect.ci_commands import check_key

    have = {(s.cwd, check_key(s.command)) for s in cascade.stages}
    out: list[Stage] = []
    for stage in derived:
        key = (stage.cwd, check_key(stage.command))
        if key not in have:
            have.add(key)
            out.append(stage)
    return tuple(out)


def weaker_gate_note(root: Path, cascade: Cascade) -> str:
    """One line when the project's CI runs a check the local cascade lacks (issue 38): "CI also
    runs `ruff check .` (.github/workflows/ci.yml:31); not run here"; "" when it does not, when
    there is no CI file, or when a CI file cannot be read (``detect --stages-from ci`` says why)."""
    from greenloop.detect.ci import ci_files, read_ci
    from greenloop.errors import FatalError

    if not ci_files(root) or any(s.origin for s in cascade.stages):
        return ""
    try:
        derived = tuple(ci_stage(c) for c in read_ci(root).commands)
    except FatalError:
        return ""
    extra = lacking(cascade, derived)
    if not extra:
        return ""
    named = [f"`{s.display}` ({s.origin})" for s in extra[:3]]
    more = f" and {len(extra) - 3} more" if len(extra) > 3 else ""
    listed = ", ".join(named) + more
    return f"CI also runs {listed}; not run here (--stages-from both runs them too)"


def _find_cascade(root: Path, config: Config, command: Sequence[str]) -> Cascade | None:
    if command:
        stage = Stage(
            name="verify", command=command_from_args(command), why="given on the command line"
        )
        return Cascade(stages=(stage,), source="command line")
    if config.stages:
        stages = tuple(
            Stage(name=s.name, command=s.run, why="configured", fix=s.fix, timeout=s.timeout)
            for s in config.stages
        )
        return Cascade(stages=stages, source="configuration")
    documented = command_from_docs(root)
    if documented:
        return Cascade(stages=(documented,), source=documented.why)
    monorepo = _workspace_cascade(root)
    if monorepo is not None:
        return monorepo
    stages = detect_stages(root)
    return Cascade(stages=stages, source="detected") if stages else None


def _workspace_cascade(root: Path) -> Cascade | None:
    """Every package's stages when ``root`` is a monorepo whose packages have verifiers."""
    from greenloop.detect.packages import find_workspace, workspace_cascade

    workspace = find_workspace(root)
    return workspace_cascade(workspace) if workspace is not None else None


def _limit_origin(stage: Stage, config: Config) -> Stage:
    """Who set the limit the stage runs under: a timeout that is reached then says so, rather
    than blame the code for a limit the user chose (issue 26)."""
    if stage.timeout is not None:
        return replace(stage, timeout_origin=f"stage {stage.name}'s timeout in {config.source}")
    return replace(stage, timeout_origin=config.timeout_origin)

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


def detect_cascade(root: Path, config: Config, command: Sequence[str] = ()) -> Cascade | None:
    """The stages to run, by priority: command line, config, agent docs, detection; with
    ``stages_from`` ``ci`` or ``both``, the project's CI instead or as well (issue 38)."""
    cascade = _find_cascade(root, config, command)
    if not command and config.stages_from != "detect":
        from greenloop.detect.ci_sources import with_ci  # CI files: read only when asked

        cascade = with_ci(root, config.stages_from, cascade, first=config.ci_first)
    if cascade is None:
        return None
    return replace(cascade, stages=tuple(_limit_origin(s, config) for s in cascade.stages))


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

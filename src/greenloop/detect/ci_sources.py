"""Stages from the project's CI (issue 38): ``--stages-from ci|both`` and the line that says what
CI runs that the local gate lacks. Imported only then: detection and the Stop hook never read CI."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from greenloop.detect.stages import Cascade, Stage

TYPE_CHECKING = False
if TYPE_CHECKING:
    from greenloop.detect.ci import CiCommand


def with_ci(
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

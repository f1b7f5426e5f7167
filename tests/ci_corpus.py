"""The CI corpus (issue 38): real projects' CI files under tests/resources/ci/<project>/, each with
``expected.json``, the commands CI runs on a pull request as read by hand (origin, cwd, a text the
derived command must hold), scored against what greenloop derives."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from greenloop.detect.ci import CiCommand, read_ci

CORPUS = Path(__file__).parent / "resources" / "ci"
_ASSIGNMENTS = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*=(?:'[^']*'|\S*)\s+)+")


@dataclass
class Score:
    project: str
    matched: list[tuple[dict[str, str], CiCommand]] = field(default_factory=list)
    missed: list[dict[str, str]] = field(default_factory=list)
    extra: list[CiCommand] = field(default_factory=list)


def projects() -> Iterator[Path]:
    return (p for p in sorted(CORPUS.iterdir()) if (p / "expected.json").is_file())


def score(project: Path) -> Score:
    expected = json.loads((project / "expected.json").read_text())["expected"]
    derived = list(read_ci(project).commands)
    result = Score(project=project.name)
    for want in expected:
        hit = next((d for d in derived if _matches(want, d)), None)
        if hit is None:
            result.missed.append(want)
        else:
            derived.remove(hit)
            result.matched.append((want, hit))
    result.extra = derived
    return result


def _matches(want: dict[str, str], got: CiCommand) -> bool:
    cwd = got.cwd or "."
    return got.origin == want["origin"] and cwd == want["cwd"] and want["command"] in got.command


def without_env(command: str) -> str:
    return _ASSIGNMENTS.sub("", command)


def origin_line(project: Path, origin: str) -> str:
    path, _, line = origin.rpartition(":")
    return (project / path).read_text().splitlines()[int(line) - 1]

"""Ground truth shared by the JS, Go and Rust readers: what a runner's own report says.

Nothing here imports greenloop: the facts come from the runners' structured reports
(JSON, JUnit XML, TAP) or, where a runner has none, from the fixed lines it prints
for one failure, read by the few lines below and cross-checked by a second run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_TYPED = re.compile(r"^\s*(?:Uncaught )?([A-Z]\w*(?:Error|Exception))(?: \[\w+\])?:\s*(.*)$")


@dataclass(frozen=True, slots=True, kw_only=True)
class Truth:
    """What the runner's report says about one run."""

    ids: tuple[str, ...] = ()
    error_type: str | None = None
    message: str | None = None
    passed: int | None = None
    failed: int | None = None
    skipped: int | None = None
    source: str = ""
    notes: tuple[str, ...] = field(default=())

    def counts(self) -> dict[str, int | None]:
        return {"passed": self.passed, "failed": self.failed, "skipped": self.skipped}


def strip_ansi(text: str) -> str:
    return ANSI.sub("", text)


def split_error(text: str) -> tuple[str | None, str | None]:
    """``(type, message)`` from the first non-empty line of an error text."""
    for line in strip_ansi(text).splitlines():
        if line.strip():
            match = _TYPED.match(line)
            if match:
                return match[1], match[2].strip() or None
            return None, line.strip()
    return None, None


def error_in(text: str) -> tuple[str | None, str | None]:
    """The first ``SomethingError: message`` line anywhere in ``text``."""
    for line in strip_ansi(text).splitlines():
        match = _TYPED.match(line)
        if match:
            return match[1], match[2].strip() or None
    return None, None


def tap_failures(text: str) -> tuple[list[tuple[str, str]], dict[str, int]]:
    """Leaf ``not ok`` test points of a (possibly nested) TAP stream, with their YAML block.

    Returns ``[(id, yaml), ...]`` first failure first and ``{pass, fail, skip}`` of leaves.
    """
    lines = strip_ansi(text).splitlines()
    points: list[tuple[int, bool, str, str, int]] = []  # indent, ok, title, yaml, index
    for index, line in enumerate(lines):
        match = re.match(r"^(\s*)(ok|not ok) \d+(?: - (.*?))?(\s+# (?:SKIP|TODO).*)?$", line)
        if match:
            yaml = _yaml_after(lines, index, len(match[1]))
            skip = bool(match[4])
            points.append((len(match[1]), match[2] == "ok" or skip, match[3] or "", yaml, index))
    failures: list[tuple[str, str]] = []
    tally = {"pass": 0, "fail": 0, "skip": 0}
    for i, (indent, ok, title, yaml, _) in enumerate(points):
        if _has_children(points, i, indent):
            continue  # a subtest summary point (tap nests a file's tests under it)
        skipped = "# SKIP" in lines[points[i][4]] or "# TODO" in lines[points[i][4]]
        tally["skip" if skipped else "pass" if ok else "fail"] += 1
        if not ok:
            failures.append((title, yaml))
    return failures, tally


def _has_children(points: list[tuple[int, bool, str, str, int]], i: int, indent: int) -> bool:
    """A point whose preceding deeper points belong to it (TAP 13 subtests print first)."""
    return i > 0 and points[i - 1][0] > indent


def _yaml_after(lines: list[str], index: int, indent: int) -> str:
    if index + 1 >= len(lines) or lines[index + 1].strip() != "---":
        return ""
    block: list[str] = []
    for line in lines[index + 2 :]:
        if line.strip() == "...":
            break
        block.append(line[indent:])
    return "\n".join(block)


def yaml_field(yaml: str, name: str) -> str | None:
    """A top-level-ish scalar (or the first line of a block scalar) from a TAP YAML block."""
    lines = yaml.splitlines()
    for index, line in enumerate(lines):
        match = re.match(rf"^\s*{name}:\s*(.*)$", line)
        if match:
            value = match[1].strip()
            if value in ("|-", "|", ">-", ">", "") and index + 1 < len(lines):
                value = lines[index + 1].strip()
            return value.strip("'\"") or None
    return None

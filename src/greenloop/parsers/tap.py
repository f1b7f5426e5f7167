"""node-tap (TAP 14): nested ``# Subtest:`` blocks; the failing assertions are the leaves."""

from __future__ import annotations

import re

from greenloop.parsers.generic import MAX_FAILURES, capped, lines_of, relative, to_int
from greenloop.parsers.js_tests import js_frames, project_frame
from greenloop.parsers.model import Counts, Failure, Frame, Kind, ParseResult, ParserInput
from greenloop.parsers.node_test import yaml_block

_SUBTEST = re.compile(r"^(?P<indent> *)# Subtest: (?P<name>.*)$")
_NOT_OK = re.compile(r"^(?P<indent> *)not ok \d+ - (?P<name>.*?)(?: # (?P<directive>\w+)\b.*)?$")
_TOTALS = re.compile(r"^# \{ (?P<body>total: \d+.*) \}$")
_SCRIPT = re.compile(r"\.[cm]?[jt]sx?$")


def parse(inp: ParserInput) -> ParseResult:
    lines = lines_of(inp)
    failures: list[Failure] = []
    open_: list[tuple[int, str]] = []  # (indent, name) of the subtests enclosing the line
    for i, line in enumerate(lines):
        if (s := _SUBTEST.match(line)) is not None:
            depth = len(s["indent"])
            open_ = [o for o in open_ if o[0] < depth] + [(depth, s["name"].strip())]
            continue
        m = _NOT_OK.match(line) if "not ok " in line else None
        if m is None or len(failures) >= MAX_FAILURES or m["directive"] in ("TODO", "todo"):
            continue
        depth = len(m["indent"])
        if any(d == depth and n == m["name"].strip() for d, n in open_):
            continue  # a subtest's own result: its failing assertions are reported instead
        parents = [n for d, n in open_ if d < depth]
        fields = yaml_block(lines, i + 1, depth + 2)
        failures.append(_failure(parents, m["name"].strip(), fields, inp.root))
    return ParseResult(tool="tap", failures=tuple(failures), counts=_counts(lines))


def _failure(parents: list[str], message: str, fields: dict[str, str], root: str) -> Failure:
    names = [p for p in parents if not _SCRIPT.search(p)]
    files = [relative(p, root) for p in parents if _SCRIPT.search(p)]
    frames = js_frames(["at " + s.strip() for s in fields.get("stack", "").split("\n")], root)
    where = project_frame(frames) or _at(fields.get("at", ""), root)
    return Failure(
        kind=Kind.TEST,
        id=" > ".join(names) or (files[-1] if files else message),
        file=where.file if where else "",
        line=where.line if where else None,
        error_type=fields.get("type", "").strip(),
        message=message,
        frames=frames,
        detail=capped([d for d in fields.get("diff", "").split("\n") if d.strip()]),
    )


def _at(value: str, root: str) -> Frame | None:
    keys = dict(line.strip().split(": ", 1) for line in value.split("\n") if ": " in line)
    if "fileName" not in keys:
        return None
    return Frame(file=relative(keys["fileName"], root), line=to_int(keys.get("lineNumber")))


def _counts(lines: list[str]) -> Counts:
    m = next((m for line in reversed(lines) if (m := _TOTALS.match(line))), None)
    if m is None:
        return Counts()
    values = {
        key.strip(): int(value)
        for key, _, value in (part.partition(":") for part in m["body"].split(","))
        if value.strip().isdigit()
    }
    return Counts(
        passed=values.get("pass", 0),
        failed=values.get("fail", 0),
        skipped=values.get("skip", 0) + values.get("todo", 0),
        summary_seen=True,
    )

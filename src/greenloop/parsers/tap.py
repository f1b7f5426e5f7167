"""node-tap (TAP 14): nested ``# Subtest:`` blocks; the failing assertions are the leaves."""

from __future__ import annotations

import re
from dataclasses import replace

from greenloop.parsers.generic import MAX_FAILURES, capped, lines_of, relative, to_int
from greenloop.parsers.js_tests import js_frames, project_frame
from greenloop.parsers.model import Counts, Failure, Frame, Kind, ParseResult, ParserInput
from greenloop.parsers.node_test import load_errors, yaml_block

_SUBTEST = re.compile(r"^(?P<indent> *)# Subtest: (?P<name>.*)$")
_NOT_OK = re.compile(r"^(?P<indent> *)not ok \d+ - (?P<name>.*?)(?: # (?P<directive>\w+)\b.*)?$")
_TOTALS = re.compile(r"^# \{ (?P<body>total: \d+.*) \}$")
_SCRIPT = re.compile(r"\.[cm]?[jt]sx?$")
_POINT = re.compile(r"^(?P<indent> *)(?P<ok>ok|not ok) \d+\b(?P<rest>.*)$")
_DIRECTIVE = re.compile(r"\s# (?:SKIP|TODO)")


def parse(inp: ParserInput) -> ParseResult:
    lines = lines_of(inp)
    failures: list[Failure] = []
    open_: list[tuple[int, str, int]] = []  # (indent, name, failures before it) enclosing the line
    for i, line in enumerate(lines):
        if (s := _SUBTEST.match(line)) is not None:
            depth = len(s["indent"])
            open_ = [o for o in open_ if o[0] < depth] + [(depth, s["name"].strip(), len(failures))]
            continue
        m = _NOT_OK.match(line) if "not ok " in line else None
        if m is None or len(failures) >= MAX_FAILURES or m["directive"] in ("TODO", "todo"):
            continue
        depth, name = len(m["indent"]), m["name"].strip()
        if any(d == depth and n == name and len(failures) > f for d, n, f in open_):
            continue  # a subtest's own result: its failing assertions are reported instead
        parents = [n for d, n, _ in open_ if d < depth]
        fields = yaml_block(lines, i + 1, depth + 2)
        failures.append(_failure(parents, name, fields, inp.root))
    return ParseResult(
        tool="tap",
        failures=tuple(_with_load_errors(failures, lines, inp.root)),
        counts=_counts(lines),
    )


def _with_load_errors(failures: list[Failure], lines: list[str], root: str) -> list[Failure]:
    """A test file that failed with no failing test in it: node's load error printed for it."""
    if not any(f.id == f.message and _SCRIPT.search(f.id) for f in failures):
        return failures
    errors = load_errors(lines, root)
    return [_file_failure(f, errors) if f.id == f.message else f for f in failures]


def _file_failure(failure: Failure, errors: list[Failure]) -> Failure:
    error = next((e for e in errors if _mentions(e, failure.id)), None)
    if error is not None:
        return replace(error, id=failure.id)
    code = next((d for d in failure.detail if d.startswith("exitCode: ")), "")
    return replace(failure, message=f"the test file exited ({code})" if code else failure.message)


def _mentions(error: Failure, test_file: str) -> bool:
    return any(f.file == test_file for f in error.frames)


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
        detail=capped([d for d in fields.get("diff", "").split("\n") if d.strip()])
        or tuple(f"exitCode: {v.strip()}" for k, v in fields.items() if k == "exitCode"),
    )


def _at(value: str, root: str) -> Frame | None:
    keys = dict(line.strip().split(": ", 1) for line in value.split("\n") if ": " in line)
    if "fileName" not in keys:
        return None
    return Frame(file=relative(keys["fileName"], root), line=to_int(keys.get("lineNumber")))


def _counts(lines: list[str]) -> Counts:
    m = next((m for line in reversed(lines) if (m := _TOTALS.match(line))), None)
    if m is None:
        return leaf_counts(lines)
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


def leaf_counts(lines: list[str]) -> Counts:
    """TAP 13 (tap 16 without a TTY) has no totals: its leaf points are the tests.

    A subtest's own point follows its children's (deeper) points: it is not counted. The run is
    complete when the top level's plan (``1..N``) matches its N points.
    """
    tally = {"ok": 0, "not ok": 0, "skip": 0}
    previous, top, plan = -1, 0, -1
    for line in lines:
        m = _POINT.match(line) if "ok " in line else None
        if m is None:
            plan = int(line[3:]) if line.startswith("1..") and line[3:].isdigit() else plan
            continue
        depth, previous = previous, len(m["indent"])
        top += previous == 0
        if depth > previous:
            continue
        tally["skip" if _DIRECTIVE.search(m["rest"]) else m["ok"]] += 1
    if previous < 0:
        return Counts()
    return Counts(
        passed=tally["ok"], failed=tally["not ok"], skipped=tally["skip"], summary_seen=plan == top
    )

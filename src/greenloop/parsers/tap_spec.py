"""tap-spec (``tape test/*.js | tap-spec``): tape's TAP redrawn as a spec list.

A test is a heading indented 2 (tape's ``# name``), its assertions ``✔``/``✖`` lines indented 4; a
failed one is followed by a rule of dashes and tape's YAML keys (``operator``, ``expected``,
``actual``, ``at``). ``Failed Tests:`` repeats the failures; the summary is ``total:``,
``passing:``, ``failing:``. When node ends tape with an uncaught exception the summary is missing and
node's error block follows the heading of the test it was running.
"""

from __future__ import annotations

import re
from dataclasses import replace

from greenloop.parsers.generic import MAX_FAILURES, capped, lines_of
from greenloop.parsers.js_tests import js_frames, project_frame
from greenloop.parsers.model import Counts, Failure, Kind, ParseResult, ParserInput
from greenloop.parsers.node_test import load_errors

_HEADING = re.compile(r"^  (?P<name>\S.*?)\s*$")
_MARK = re.compile(r"^    (?P<mark>[\u2714\u2716]) (?P<name>.+?)\s*$")
_RULE = re.compile(r"^    -+$")
_KEY = re.compile(r"^      (?P<key>operator|expected|actual|at): ?(?P<value>.*)$")
_TOTAL = re.compile(r"^  (?P<key>total|passing|failing|skipped|todo):\s+(?P<n>\d+)\s*$")
_DETAIL = ("operator", "expected", "actual")


def parse(inp: ParserInput) -> ParseResult:
    lines = lines_of(inp)
    failures: list[Failure] = []
    test = ""
    for i, line in enumerate(lines):
        if line.startswith("  Failed Tests: "):
            break  # tap-spec lists every failure again below this line
        if (h := _HEADING.match(line)) is not None and not _TOTAL.match(line):
            test = h["name"]
            continue
        m = _MARK.match(line) if line.startswith("    ") else None
        if m is not None and m["mark"] == "\u2716" and len(failures) < MAX_FAILURES:
            failures.append(_failure(test, m["name"], _fields(lines, i + 1), inp.root))
    failures += _crash(lines, inp.root)
    return ParseResult(tool="tap-spec", failures=tuple(failures), counts=_counts(lines))


def _fields(lines: list[str], start: int) -> dict[str, str]:
    """The YAML keys under a failed assertion's rule; block scalars joined with newlines."""
    if start >= len(lines) or not _RULE.match(lines[start]):
        return {}
    fields: dict[str, str] = {}
    key = ""
    for line in lines[start + 1 : start + 200]:
        if _MARK.match(line) or (line.strip() and not line.startswith("      ")):
            break
        if (k := _KEY.match(line)) is not None:
            key = k["key"]
            fields[key] = "" if k["value"] in ("|-", "|", ">-", ">") else k["value"]
        elif re.match(r"^      \w+:", line):
            key = ""  # stack: (tape prints it empty through tap-spec) and the rest: not facts
        elif key and line.strip():
            fields[key] = (fields[key] + "\n" + line.strip()).lstrip("\n")
    return fields


def _failure(test: str, assertion: str, fields: dict[str, str], root: str) -> Failure:
    frames = js_frames(["at " + fields["at"]] if fields.get("at") else [], root)
    where = project_frame(frames)
    return Failure(
        kind=Kind.TEST,
        id=test or assertion,
        file=where.file if where else "",
        line=where.line if where else None,
        error_type="",
        message=assertion,
        frames=frames,
        detail=capped([f"{k}: {fields[k]}" for k in _DETAIL if fields.get(k)]),
    )


def _crash(lines: list[str], root: str) -> list[Failure]:
    """node's uncaught exception that ended tape, named by the test that was running."""
    if any(_TOTAL.match(line) for line in lines):
        return []
    errors = load_errors(lines, root)[:1]
    if not errors:
        return []
    said = f"{errors[0].error_type}: {errors[0].message}"
    end = next((i for i, line in enumerate(lines) if line.startswith(said)), len(lines))
    tests = [h["name"] for line in lines[:end] if (h := _HEADING.match(line))]
    return [replace(errors[0], id=tests[-1])] if tests else errors


def _counts(lines: list[str]) -> Counts:
    values = {m["key"]: int(m["n"]) for line in lines if (m := _TOTAL.match(line))}
    if "total" not in values:
        return Counts()
    return Counts(
        collected=values["total"],
        passed=values.get("passing", 0),
        failed=values.get("failing", 0),
        skipped=values.get("skipped", 0) + values.get("todo", 0),
        summary_seen=True,
    )

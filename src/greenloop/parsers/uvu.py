"""uvu: ``FAIL  suite  "test"`` blocks before the Total/Passed/Skipped summary."""

from __future__ import annotations

import re

from greenloop.parsers.generic import MAX_FAILURES, capped, lines_of
from greenloop.parsers.js_tests import js_frames, project_frame
from greenloop.parsers.model import Counts, Failure, Kind, ParseResult, ParserInput

_FAIL = re.compile(r'^ +FAIL  (?:(?P<suite>\S.*?)  )?"(?P<name>.*)"$')
_TOTAL = re.compile(r"^  (?P<what>Total|Passed|Skipped):\s+(?P<n>\d+)$")
_OPERATOR = re.compile(
    r"(?<!\s)\s+\((?:is|equal|ok|not|type|instance|match|snapshot|fixture|throws)\S*\)$"
)


def parse(inp: ParserInput) -> ParseResult:
    lines = lines_of(inp)
    starts = [i for i, line in enumerate(lines) if "FAIL  " in line and _FAIL.match(line)]
    failures: list[Failure] = []
    for n, start in enumerate(starts[:MAX_FAILURES]):
        end = starts[n + 1] if n + 1 < len(starts) else _summary_start(lines, start)
        failures.append(_failure(lines[start], lines[start + 1 : end], inp.root))
    return ParseResult(tool="uvu", failures=tuple(failures), counts=_counts(lines))


def _summary_start(lines: list[str], start: int) -> int:
    return next((i for i in range(start + 1, len(lines)) if _TOTAL.match(lines[i])), len(lines))


def _failure(head: str, body: list[str], root: str) -> Failure:
    m = _FAIL.match(head)
    assert m is not None
    name = f"{m['suite']} > {m['name']}" if m["suite"] else m["name"]
    text = [b.strip() for b in body if b.strip() and not b.lstrip().startswith("at ")]
    frames = js_frames(body, root)
    where = project_frame(frames)
    message = _OPERATOR.sub("", text[0]) if text else ""
    return Failure(
        kind=Kind.TEST,
        id=name,
        file=where.file if where else "",
        line=where.line if where else None,
        message=message.rstrip(":").strip(),
        frames=frames,
        detail=capped(text[1:]),
    )


def _counts(lines: list[str]) -> Counts:
    seen: dict[str, int] = {}
    for line in lines:
        m = _TOTAL.match(line) if line.startswith("  ") else None
        if m:
            seen[m["what"]] = int(m["n"])
    if "Total" not in seen:
        return Counts()
    passed = seen.get("Passed", 0)
    return Counts(  # uvu's Total counts the tests that ran: skipped ones are not in it
        passed=passed,
        failed=seen["Total"] - passed,
        skipped=seen.get("Skipped", 0),
        summary_seen=True,
    )

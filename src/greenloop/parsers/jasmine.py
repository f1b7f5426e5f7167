"""jasmine's console reporter: ``Failures:``, ``N) <full name>`` blocks, then ``N specs, F failures``.

A block is ``  Message:`` (the expectation or the error, indented 4) then ``  Stack:``, once per
failed expectation. ``Suite error: <suite>`` blocks (an ``afterAll`` error; ``top suite``: a spec
file that failed to load) follow the specs' blocks. ``Pending:`` lists pending specs the same way.
"""

from __future__ import annotations

import re

from greenloop.parsers.generic import MAX_FAILURES, capped, lines_of
from greenloop.parsers.js_tests import js_frames, project_frame, split_error
from greenloop.parsers.model import Counts, Failure, Kind, ParseResult, ParserInput

_SPEC = re.compile(r"^\d+\) (?P<name>\S.*)$")
_SUITE = re.compile(r"^Suite error: (?P<name>\S.*)$")
_SUMMARY = re.compile(
    r"^(?P<specs>\d+) specs?, (?P<failures>\d+) failures?(?:, (?P<pending>\d+) pending specs?)?$"
)
_ENDS = ("Pending:", "Finished in ", "No specs found", "Ran ")


def parse(inp: ParserInput) -> ParseResult:
    lines = lines_of(inp)
    starts = _block_starts(lines)
    failures = [
        _failure(lines[start], lines[start + 1 : end], inp.root)
        for start, end in starts[:MAX_FAILURES]
    ]
    specs = sum(f.kind == Kind.TEST for f in failures)
    return ParseResult(tool="jasmine", failures=tuple(failures), counts=_counts(lines, specs))


def _block_starts(lines: list[str]) -> list[tuple[int, int]]:
    """(header, end) of each failure block after the last ``Failures:`` (or the first suite error)."""
    begin = next(
        (i for i in range(len(lines) - 1, -1, -1) if lines[i] == "Failures:"),
        next((i - 1 for i, line in enumerate(lines) if _SUITE.match(line)), None),
    )
    if begin is None:
        return []
    heads: list[int] = []
    end = len(lines)
    for i in range(begin + 1, len(lines)):
        line = lines[i]
        if line.startswith(_ENDS) or _SUMMARY.match(line):
            end = i
            break
        if _SPEC.match(line) or _SUITE.match(line):
            heads.append(i)
    return [(h, heads[n + 1] if n + 1 < len(heads) else end) for n, h in enumerate(heads)]


def _failure(head: str, body: list[str], root: str) -> Failure:
    suite = _SUITE.match(head)
    spec = _SPEC.match(head)
    name = suite["name"] if suite else spec["name"] if spec else head
    frames = js_frames(body, root)
    where = project_frame(frames)
    message = _first_message(body)
    error_type, text = split_error(message) if message else ("", "")
    return Failure(
        kind=Kind.CRASH if suite else Kind.TEST,
        id=f"Suite error: {name}" if suite else name,
        file=where.file if where else "",
        line=where.line if where else None,
        error_type=error_type,
        message=text,
        frames=frames,
        detail=capped(_detail(body, message)),
    )


def _detail(body: list[str], message: str) -> list[str]:
    """The lines beside the first message: more messages, a diff; no labels, no stack frames."""
    kept = [b.rstrip() for b in body if b.strip() and b.strip() not in ("Message:", "Stack:")]
    kept = [b for b in kept if not b.lstrip().startswith("at ")]
    return kept[1:] if kept and kept[0].strip() == message else kept


def _first_message(body: list[str]) -> str:
    """The first line under the first ``  Message:`` (an expectation or ``TypeError: …``)."""
    for i, line in enumerate(body):
        if line.strip() == "Message:":
            return next((b.strip() for b in body[i + 1 :] if b.strip()), "")
    return ""


def _counts(lines: list[str], failed_specs: int) -> Counts:
    """``N specs, F failures[, P pending specs]``: F counts suite errors' expectations too."""
    found = next((m for line in reversed(lines) if (m := _SUMMARY.match(line))), None)
    if found is None:
        return Counts()
    specs, failures = int(found["specs"]), int(found["failures"])
    pending = int(found["pending"] or 0)
    failed = failed_specs or failures
    return Counts(
        passed=max(specs - failed - pending, 0),
        failed=failures,
        skipped=pending,
        summary_seen=True,
    )

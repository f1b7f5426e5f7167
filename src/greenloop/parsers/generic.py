"""Fallback: ``file:line[:col]: message`` diagnostics from any tool, and plain 'N passed, N failed'."""

from __future__ import annotations

import re

from greenloop.parsers.model import Counts, Failure, Kind, ParseResult, ParserInput

_DIAG = re.compile(
    r"^(?P<file>[^\s:][^:\n]*?\.[A-Za-z0-9]{1,6}):(?P<line>\d+)(?::(?P<col>\d+))?:?\s+"
    r"(?:(?P<sev>fatal error|error|warning|note)\s*:?\s*)?(?P<msg>\S.*)$",
    re.MULTILINE,
)
_PLAIN_SUMMARY = re.compile(
    r"^(?:\w+:\s*)?(?P<passed>\d+) passed, (?P<failed>\d+) failed(?:, (?P<skipped>\d+) skipped)?\s*$",
    re.MULTILINE,
)
MAX_FAILURES = 500


def parse(inp: ParserInput) -> ParseResult:
    text = inp.merged or (inp.stdout + "\n" + inp.stderr)
    failures: list[Failure] = []
    for m in _DIAG.finditer(text):
        if len(failures) >= MAX_FAILURES:
            break
        sev = (m["sev"] or "").replace("fatal ", "")
        if sev == "note":
            continue
        failures.append(
            Failure(
                kind=Kind.BUILD,
                id=f"{m['file']}:{m['line']}",
                file=m["file"],
                line=int(m["line"]),
                column=int(m["col"]) if m["col"] else None,
                message=m["msg"].strip()[:500],
                error_type=sev,
                severity="warning" if sev == "warning" else "error",
            )
        )
    return ParseResult(tool="generic", failures=tuple(failures), counts=_plain_counts(text))


def _plain_counts(text: str) -> Counts:
    found = list(_PLAIN_SUMMARY.finditer(text))
    if not found:
        return Counts()
    m = found[-1]
    return Counts(
        passed=int(m["passed"]),
        failed=int(m["failed"]),
        skipped=int(m["skipped"] or 0),
        summary_seen=True,
    )

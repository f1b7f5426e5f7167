"""pytest: the closing summary line (structured plugin data and tracebacks build on this)."""

from __future__ import annotations

import re

from greenloop.parsers.model import Counts, ParseResult, ParserInput

# "==== 3 failed, 41 passed, 2 warnings in 2.31s ====" / "no tests ran in 0.01s"
_SUMMARY = re.compile(r"^=+ (?P<body>.*?) in [\d.]+s(?: \([^)]*\))? =+\s*$", re.MULTILINE)
_PART = re.compile(r"(\d+) (failed|passed|errors?|skipped|xfailed|xpassed|warnings?|deselected)")
_COLLECTED = re.compile(r"^collected (\d+) items?", re.MULTILINE)
_WORKERS = re.compile(r"^\[gw\d+\].*|^\d+ workers \[(\d+) items?\]", re.MULTILINE)

_FIELD = {"error": "errors", "errors": "errors", "warning": "warnings", "warnings": "warnings"}


def parse(inp: ParserInput) -> ParseResult:
    return ParseResult(tool="pytest", counts=parse_counts(inp.stdout + "\n" + inp.stderr))


def parse_counts(text: str) -> Counts:
    summaries = list(_SUMMARY.finditer(text))
    collected = _collected(text)
    if not summaries:
        return Counts(collected=collected)
    values: dict[str, int] = {}
    for number, word in _PART.findall(summaries[-1]["body"]):
        values[_FIELD.get(word, word)] = int(number)
    return Counts(
        collected=collected,
        passed=values.get("passed", 0),
        failed=values.get("failed", 0),
        errors=values.get("errors", 0),
        skipped=values.get("skipped", 0),
        xfailed=values.get("xfailed", 0),
        xpassed=values.get("xpassed", 0),
        warnings=values.get("warnings", 0),
        summary_seen=True,
    )


def _collected(text: str) -> int | None:
    m = _COLLECTED.search(text)
    if m:
        return int(m.group(1))
    for w in _WORKERS.finditer(text):
        if w.group(1):
            return int(w.group(1))
    return None

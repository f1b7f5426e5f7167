"""pytest's closing summary line(s): the counts, summed over the sessions a wrapper ran in a row,
and the collected count from the header ("collected 41 items", xdist's "4 workers [41 items]")."""

from __future__ import annotations

import re

from greenloop.parsers.model import Counts

# "==== 3 failed, 41 passed, 2 warnings in 2.31s ====", "1 failed in 0.02s" (-q), "no tests ran in 0.01s"
SUMMARY = re.compile(
    r"^(?:=+ )?(?P<body>(?:\d+ (?:subtests )?(?:failed|passed|errors?|skipped|xfailed|xpassed|warnings?|"
    r"deselected|rerun)(?:, )?)+|no tests ran) in [\d.]+s(?: \([^)\n]*\))?(?: =+)?[ \t]*$",
    re.MULTILINE,
)
_PART = re.compile(
    r"(?<!\d)(\d+) ((?:subtests )?(?:failed|passed)|errors?|skipped|xfailed|xpassed|warnings?"
    r"|deselected)"
)
_BANNER = re.compile(r"^=+ test session starts =+[ \t]*$", re.MULTILINE)
_COLLECTED = re.compile(r"(?:^|\.\.\. )collected (\d+) items?", re.MULTILINE)
_WORKERS = re.compile(r"^\d+ workers \[(\d+) items?\]", re.MULTILINE)
_FIELD = {
    "error": "errors",
    "errors": "errors",
    "warning": "warnings",
    "warnings": "warnings",
    "subtests passed": "subtests_passed",
    "subtests failed": "subtests_failed",
}


def parse_counts(text: str) -> Counts:
    summaries = list(SUMMARY.finditer(text))
    collected = count_collected(text)
    if not summaries:
        return Counts(collected=collected)
    sessions = split_sessions(text, summaries)
    if len(sessions) > 1:
        found = [count_collected(text[start:end]) for start, end, _ in sessions]
        collected = sum(n for n in found if n is not None) if None not in found else collected
    values: dict[str, int] = {}
    for _, _, summary in sessions:
        for number, word in _PART.findall(summary["body"]):
            key = _FIELD.get(word, word)
            values[key] = values.get(key, 0) + int(number)
    return Counts(
        collected=collected,
        passed=values.get("passed", 0),
        failed=values.get("failed", 0),
        errors=values.get("errors", 0),
        skipped=values.get("skipped", 0),
        xfailed=values.get("xfailed", 0),
        xpassed=values.get("xpassed", 0),
        warnings=values.get("warnings", 0),
        subtests_passed=values.get("subtests_passed", 0),
        subtests_failed=values.get("subtests_failed", 0),
        summary_seen=True,
    )


def split_sessions(
    text: str, summaries: list[re.Match[str]]
) -> list[tuple[int, int, re.Match[str]]]:
    """(start, end, summary) of each pytest session: several when a wrapper (tox, nox, make) ran
    pytest several times in a row, each banner followed by its own summary before the next one.
    Any other layout (a pytester run's output captured inside a failure) is one session: the last
    summary's. None without a summary (two summary headers and no counts line)."""
    if not summaries:
        return []
    banners = [m.start() for m in _BANNER.finditer(text)]
    ends = [*banners[1:], len(text)]
    spans = list(zip(banners, ends, summaries, strict=False))
    alternate = all(start < summary.start() < end for start, end, summary in spans)
    if len(banners) > 1 and len(banners) == len(summaries) and alternate:
        return spans
    return [(0, len(text), summaries[-1])]


def count_collected(text: str) -> int | None:
    m = _COLLECTED.search(text) or _WORKERS.search(text)
    return int(m.group(1)) if m else None

"""What a plugin or the tests print beside pytest's report, added to the failures: pytest-cov's
``--cov-fail-under`` gate, hypothesis's explained lines, an exception a test only shows caught."""

from __future__ import annotations

import re
from dataclasses import replace

from greenloop.parsers.model import Failure, Kind, ParseResult
from greenloop.parsers.pytraceback import relative

# pytest-cov: "FAIL Required test coverage of 100% not reached. Total coverage: 75.00%"
_COVERAGE_GATE = re.compile(
    r"^FAIL Required test coverage of [\d.]+% not reached\. Total coverage: [\d.]+%",
    re.MULTILINE,
)
# a row of its table: Name Stmts Miss [Branch BrPart] Cover [Missing]
_COVERAGE_ROW = re.compile(
    r"^(?P<name>\S+\.py) +\d+ +\d+ +(?:\d+ +\d+ +)?(?P<cover>\d+(?:\.\d+)?)%"
    r"(?: +(?P<missing>\S[^\n]*))?$",
    re.MULTILINE,
)
COVERAGE_ROWS = 10
# an exception's repr inside an assertion: `assert not NameError("name 'x' is not defined")`
_EMBEDDED_EXCEPTION = re.compile(
    r"\b(?P<type>[A-Z]\w*(?:Error|Exception))\((?P<q>['\"])(?P<message>.+?)(?P=q)\)"
)
_NAMES_ITS_SITE = frozenset({"NameError", "AttributeError", "ImportError", "UnboundLocalError"})
_EXPLAINED = "These lines were always and only run by failing test cases:"
_EXPLAINED_LOC = re.compile(r"^[ \t|E]*(?P<loc>[^\s|]+\.py:\d+)[ \t]*$")
MAX_EXPLAINED = 12


def with_coverage_gate(result: ParseResult, text: str) -> ParseResult:
    """pytest-cov's ``--cov-fail-under`` failing a run whose tests all passed: one error naming
    the total and the files under 100 % with their missing lines, where the output held only a
    coverage table the digest would cut. Beside failing tests the low coverage is their echo
    (what did not run was not covered): they are the failure."""
    gate = _COVERAGE_GATE.search(text) if not result.errors else None
    if gate is None:
        return result
    rows = [m for m in _COVERAGE_ROW.finditer(text) if float(m["cover"]) < 100]
    shown = [
        f"{m['name']}: {m['cover']}%"
        + (f", missing {m['missing'].strip()}" if m["missing"] else "")
        for m in rows
    ]
    more = (
        [f"... {len(rows) - COVERAGE_ROWS} more files under 100 %"]
        if len(rows) > COVERAGE_ROWS
        else []
    )
    first = rows[0] if rows else None
    line = _first_line(first["missing"]) if first and first["missing"] else None
    gate_failure = Failure(
        kind=Kind.LINT,
        id="coverage",
        file=first["name"] if first else "",
        line=line,
        code="cov-fail-under",
        error_type="CoverageFailure",
        message=gate.group(0).removeprefix("FAIL ").strip(),
        detail=(*shown[:COVERAGE_ROWS], *more),
    )
    return replace(result, failures=(*result.failures, gate_failure))


def _first_line(missing: str) -> int | None:
    m = re.match(r"\d+", missing)
    return int(m.group(0)) if m else None


def with_raised_elsewhere(result: ParseResult) -> ParseResult:
    """A first failure that only shows an exception caught for it (click's CliRunner: ``assert not
    NameError("name 'Countre' is not defined")``, ``result.exception``) gets the line that raised
    it, from the failures that raised it uncaught (click-4: ``src/click/core.py:1128``), when
    they all raised it at that one line. Only errors whose message names what is missing (a
    misspelt name or attribute): "'NoneType' object is not callable" is raised at other lines by
    other tests (click-3: termui.py:272 for a prompt, types.py:1292 for this test)."""
    first = next((i for i, f in enumerate(result.failures) if f.severity == "error"), None)
    if first is None:
        return result
    failure = result.failures[first]
    shown = _EMBEDDED_EXCEPTION.search(failure.message)
    if shown is None or shown["type"] not in _NAMES_ITS_SITE:
        return result
    raised = [
        other
        for other in result.failures
        if other.error_type.rsplit(".", 1)[-1] == shown["type"]
        and other.message == shown["message"]
        and other.file
    ]
    if len({(other.file, other.line) for other in raised}) != 1:
        return result
    other = raised[0]
    frame = other.frames[-1] if other.frames else None
    code = f" in {frame.function}: {frame.source}" if frame and frame.source else ""
    note = f"{shown['type']} raised at {other.file}:{other.line}{code} (in {other.id})"
    failures = list(result.failures)
    failures[first] = replace(failure, detail=(note, *failure.detail))
    return replace(result, failures=tuple(failures))


def with_explained_lines(result: ParseResult, text: str, root: str) -> ParseResult:
    """Hypothesis's own fault localisation ("These lines were always and only run by failing test
    cases"), gathered from every failure, leads the first failure's detail: a later failure's
    list may hold the very line at fault (bidict-1: a state machine's group named _base.py:419)."""
    lines = _explained(text, root)
    first = next((i for i, f in enumerate(result.failures) if f.severity == "error"), None)
    if not lines or first is None:
        return result
    by_file: dict[str, list[str]] = {}
    for loc in lines:
        file, _, line = loc.rpartition(":")
        by_file.setdefault(file, []).append(line)
    where = "; ".join(f"{file}:{', '.join(nums)}" for file, nums in by_file.items())
    note = f"hypothesis: only failing examples ran {where}"
    failures = list(result.failures)
    failures[first] = replace(failures[first], detail=(note, *failures[first].detail))
    return replace(result, failures=tuple(failures))


def _explained(text: str, root: str) -> list[str]:
    found: dict[str, None] = {}
    start = text.find(_EXPLAINED)
    while start >= 0 and len(found) < MAX_EXPLAINED:
        for line in text[start + len(_EXPLAINED) :].split("\n")[1:]:
            m = _EXPLAINED_LOC.match(line)
            if m is None:
                break
            found[relative(m["loc"], root)] = None
        start = text.find(_EXPLAINED, start + 1)
    return list(found)[:MAX_EXPLAINED]

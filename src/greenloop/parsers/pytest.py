"""pytest: structured plugin records when present, else the terminal text (any --tb style, -q/-v/-rA, xdist).

The text parse reads the FAILURES/ERRORS blocks for frames and messages and the short test summary for
exact node ids; the closing summary line decides whether the run completed (seed 003: a run without it
is incomplete, never "N passed").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from greenloop.parsers import pytest_artifacts
from greenloop.parsers.model import (
    INTERNAL_ERROR,
    Counts,
    Failure,
    Frame,
    Kind,
    ParseResult,
    ParserInput,
    in_dependencies,
)
from greenloop.parsers.pytraceback import (
    Traceback,
    doctest_failure,
    in_words,
    parse_traceback,
    relative,
    split_exception,
)

MAX_BLOCKS = 200
MAX_FAILURES = 500
MAX_WARNINGS = 50

# "==== 3 failed, 41 passed, 2 warnings in 2.31s ====", "1 failed in 0.02s" (-q), "no tests ran in 0.01s"
_SUMMARY = re.compile(
    r"^(?:=+ )?(?P<body>(?:\d+ (?:subtests )?(?:failed|passed|errors?|skipped|xfailed|xpassed|warnings?|"
    r"deselected|rerun)(?:, )?)+|no tests ran) in [\d.]+s(?: \([^)\n]*\))?(?: =+)?[ \t]*$",
    re.MULTILINE,
)
_PART = re.compile(
    r"(\d+) ((?:subtests )?(?:failed|passed)|errors?|skipped|xfailed|xpassed|warnings?|deselected)"
)
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
# pytest-timeout's thread method (see _with_thread_timeout)
_MAIN_STACK = re.compile(r"^~+ Stack of MainThread \(\d+\) ~+$", re.MULTILINE)
_STACK_END = re.compile(r"^(?:~+ Stack of |\++ Timeout \++$)", re.MULTILINE)
_TIMEOUT_LIMIT = re.compile(r"^timeout: (?P<limit>[\d.]+s)$", re.MULTILINE)
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

_SECTION = re.compile(r"=+ (?P<name>[^=\n]+?) =+[ \t]*")
SECTIONS = (
    "ERRORS",
    "FAILURES",
    "short test summary info",
    "warnings summary",
    "PASSES",
    "XPASSES",
)
HEAD = 4_000_000
TAIL = 1_000_000
_HEADER = re.compile(r"^_+ (?P<title>[^\n]+?) _+[ \t]*$", re.MULTILINE)
# pytest 9's subtests: "SUBFAILED[label] tests/t.py::T::test - msg", named "tests/t.py::T::test [label]"
# Linear: the id ends on a non-space and the message is greedy, so no run of spaces is rescanned.
_ENTRY = re.compile(
    r"^(?:(?P<cat>FAILED|ERROR)|SUB(?P<subcat>FAILED)\[(?P<label>[^\n]*?)\]) (?P<id>[^\n]*?\S)"
    r"(?: - (?P<msg>[^\n]*))?[^\S\n]*$",
    re.M,
)
_VERBOSE = re.compile(
    r"^(?:\[gw\d+\] \[ *\d+%\] (?P<cat1>FAILED|ERROR) (?P<id1>\S+::[^\n]+?)"
    r"|(?P<id2>\S+::[^\n]+?) (?P<cat2>FAILED|ERROR)(?: +\[ *\d+%\])?)[ \t]*$",
    re.MULTILINE,
)
_WORKER_CRASH = re.compile(r"worker '(?P<worker>[^']+)' crashed while running '(?P<id>[^'\n]+)'")
# an exception's repr inside an assertion: `assert not NameError("name 'x' is not defined")`
_EMBEDDED_EXCEPTION = re.compile(
    r"\b(?P<type>[A-Z]\w*(?:Error|Exception))\((?P<q>['\"])(?P<message>.+?)(?P=q)\)"
)
_NAMES_ITS_SITE = frozenset({"NameError", "AttributeError", "ImportError", "UnboundLocalError"})
_STARTUP_TRACEBACK = "Traceback (most recent call last):"
_CONFTEST_ERROR = re.compile(r"^ImportError while loading conftest '(?P<path>[^']+)'\.$", re.M)
_SESSION_BANNER = "test session starts"
_INTERNAL = "INTERNALERROR> "
PYTEST_INTERNAL = 3  # pytest's exit code for an INTERNALERROR
_FATAL = re.compile(r"^Fatal Python error: (?P<what>[^\n]+)$", re.MULTILINE)
_DUMP_FRAME = re.compile(r'^ +File "(?P<file>[^"\n]+)", line (?P<line>\d+) in (?P<func>\S+)$', re.M)
_PROGRESS = re.compile(r"^(?P<file>\S+\.py) [.FEsxXR]*[ \t]*$", re.MULTILINE)
_USAGE = re.compile(r"^(?:pytest: error|ERROR): (?!usage:)(?P<msg>[^\n]+)$", re.MULTILINE)
_WARN_LOC = re.compile(r"^\s+(?P<file>[^\s:][^:\n]*):(?P<line>\d+): (?P<type>\w+): (?P<msg>.*)$")
_EXPLAINED = "These lines were always and only run by failing test cases:"
_EXPLAINED_LOC = re.compile(r"^[ \t|E]*(?P<loc>[^\s|]+\.py:\d+)[ \t]*$")
MAX_EXPLAINED = 12
# a block title that is a test's own name (``test_x[a-1]``, ``TestX.test_y``), not pytest-mypy's
# ``test session`` or ``[mypy] pkg/mod.py``
_TEST_NAME = re.compile(r"^[A-Za-z_][\w.]*(?:\[.*\])?$")
_ERROR_TITLE = re.compile(r"^ERROR (?:at (?:setup|teardown) of |collecting )(?P<name>.+)$")


@dataclass(frozen=True, slots=True, kw_only=True)
class _Entry:
    """One FAILED or ERROR section of pytest's report: its id and its text."""

    category: str
    """FAILED or ERROR."""
    id: str
    text: str


def parse(inp: ParserInput) -> ParseResult:
    text = inp.stdout + "\n" + inp.stderr if inp.stderr else inp.stdout
    counts = parse_counts(inp.stdout[-TAIL:] + "\n" + inp.stderr[-TAIL:])
    if counts.collected is None:
        counts = replace(counts, collected=_collected(text[:HEAD]))
    result = parse_text(text, inp.root, counts)
    plugin = pytest_artifacts.read(inp.artifacts, inp.root)
    if plugin is not None:
        result = pytest_artifacts.combine(plugin, result)
    result = _with_explained_lines(_with_raised_elsewhere(result), text[:HEAD], inp.root)
    result = _with_thread_timeout(result, text, inp.root)
    if inp.exit_code == PYTEST_INTERNAL:  # pytester's output in a passing test may show one too
        result = _with_internal_error(result, text, inp.root)
    return _with_coverage_gate(result, text) if inp.exit_code else result


def _with_thread_timeout(result: ParseResult, text: str, root: str) -> ParseResult:
    """pytest-timeout's thread method: past the limit it prints every thread's stack between two
    ``Timeout`` banners and ends the process, no report, no summary. The test it was in is not
    killed from outside but hung (the code's to fix): a failing test whose frames are the main
    thread's stack, where the agent's loop sits."""
    banner = text.find("+ Timeout +")  # after a progress dot on the test's line: not anchored
    main = _MAIN_STACK.search(text, banner) if banner >= 0 else None
    if main is None:
        return result
    end = _STACK_END.search(text, main.end())
    stack = text[main.end() : end.start() if end else len(text)].splitlines()
    frames = parse_traceback(stack, root).frames
    # the repository's frames (made relative to it): not pytest's script, the stdlib, the venv
    own = [f for f in frames if not f.file.startswith(("<", "/")) and not in_dependencies(f.file)]
    if not own:
        return result
    hung = result.killed[0] if result.killed else f"{own[0].file}::{own[0].function}"
    limit = _TIMEOUT_LIMIT.search(text[:HEAD])
    over = f" (>{limit['limit']})" if limit else ""
    failure = Failure(
        kind=Kind.TEST,
        id=hung,
        file=own[-1].file,
        line=own[-1].line,
        error_type="Timeout",
        message=f"Timeout{over} from pytest-timeout: the test hung here; the run ended with it",
        frames=tuple(own),
    )
    killed = tuple(k for k in result.killed if k != hung)
    return replace(result, failures=(failure, *result.failures), killed=killed)


def _with_coverage_gate(result: ParseResult, text: str) -> ParseResult:
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


def _with_raised_elsewhere(result: ParseResult) -> ParseResult:
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


def _with_explained_lines(result: ParseResult, text: str, root: str) -> ParseResult:
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


def parse_counts(text: str) -> Counts:
    summaries = list(_SUMMARY.finditer(text))
    collected = _collected(text)
    if not summaries:
        return Counts(collected=collected)
    sessions = _sessions(text, summaries)
    if len(sessions) > 1:
        found = [_collected(text[start:end]) for start, end, _ in sessions]
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


def _sessions(text: str, summaries: list[re.Match[str]]) -> list[tuple[int, int, re.Match[str]]]:
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


def _collected(text: str) -> int | None:
    m = _COLLECTED.search(text) or _WORKERS.search(text)
    return int(m.group(1)) if m else None


def parse_text(text: str, root: str, counts: Counts) -> ParseResult:
    sections = _sections(text)
    outer = _outer_summary(text)
    if outer is not None:
        sections["short test summary info"] = outer
    entries = _entries(sections.get("short test summary info", ""), text)
    failures: list[Failure] = []
    used: set[int] = set()
    blocks = {name: _blocks(sections.get(name, "")) for name in ("ERRORS", "FAILURES")}
    untitled = _untitled(entries, [_title_name(t)[0] for b in blocks.values() for t, _ in b])
    for section, category in (("ERRORS", "ERROR"), ("FAILURES", "FAILED")):
        for title, lines in blocks[section]:
            block = _block_failure(title, lines, category, entries, (used, untitled), root)
            failures.append(block)
    if outer is not None and len(entries) < MAX_FAILURES:  # every failure has its summary line:
        named = {e.id for e in entries}  # a block none names is an inner session's
        failures = [f for f in failures if f.id in named or f.kind is not Kind.TEST]
    for i, entry in enumerate(entries):
        if i not in used and len(failures) < MAX_FAILURES:
            failures.append(_entry_failure(entry))
    crashes, killed = _crashes(text, root)
    failures = _order(failures, entries) + crashes
    if not failures and not counts.summary_seen:
        failures = _startup_crash(text, root)
    failures += _usage_errors(text, counts)
    failures += _warnings(sections.get("warnings summary", ""), root)
    notes = () if counts.summary_seen else (_incomplete_note(text),)
    return ParseResult(
        tool="pytest",
        failures=_dedupe(failures),
        counts=counts,
        killed=killed,
        notes=notes,
    )


def _sections(text: str) -> dict[str, str]:
    """The named sections; found with str.find (a regex over a 50 MB log costs a second)."""
    starts: list[tuple[int, int, str]] = []
    for name in SECTIONS:
        m = _find_rule(text, name)
        if m is not None:
            starts.append((*m, name))
    starts.sort()
    sections: dict[str, str] = {}
    for i, (_, body, name) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
        sections[name] = text[body:end]
    return sections


def _outer_summary(text: str) -> str | None:
    """The run's own short summary when sessions its tests started printed theirs before it
    (pytest-mock's suite: pytester's runs in a failure's captured stdout, each with a summary whose
    ``FAILED`` lines are meant): the last one, unless the run is several sessions one after
    another (tox running pytest three times), each with its own."""
    needle = "= short test summary info ="
    if text.count(needle) < 2 or len(_sessions(text, list(_SUMMARY.finditer(text)))) > 1:
        return None
    at = text.rfind(needle)
    while at != -1:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        end = len(text) if end == -1 else end
        if _SECTION.fullmatch(text, start, end):
            return text[end:]
        at = text.rfind(needle, 0, at)
    return None


def _find_rule(text: str, name: str) -> tuple[int, int] | None:
    """(line start, body start) of the first ``=== name ===`` line."""
    needle = f"= {name} ="
    at = text.find(needle)
    while at != -1:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        end = len(text) if end == -1 else end
        if _SECTION.fullmatch(text, start, end):
            return start, end
        at = text.find(needle, at + 1)
    return None


def _entries(summary: str, text: str) -> list[_Entry]:
    found = [
        _Entry(
            category=m["cat"] or m["subcat"],
            id=f"{m['id']} [{m['label']}]" if m["subcat"] else m["id"],
            text=(m["msg"] or "").rstrip(),
        )
        for m in _ENTRY.finditer(summary)
    ]
    if found:
        return found[:MAX_FAILURES]
    for m in _VERBOSE.finditer(text[:HEAD]):
        category = m["cat1"] or m["cat2"]
        found.append(_Entry(category=category, id=m["id1"] or m["id2"], text=""))
        if len(found) >= MAX_FAILURES:
            break
    return found


def _blocks(section: str) -> list[tuple[str | None, list[str]]]:
    """(title, lines) per failure; ``--tb=line`` has no titles: one block per location line."""
    if not section:
        return []
    headers: list[re.Match[str]] = []
    for m in _HEADER.finditer(section):
        if m["title"].startswith("coverage: "):
            break  # pytest-cov's report follows the last failure, under the same kind of rule
        if m["title"].replace("_", "").strip():
            headers.append(m)
        if len(headers) > MAX_BLOCKS:
            break
    if not headers:
        return _line_blocks(section)
    blocks: list[tuple[str | None, list[str]]] = []
    for i, m in enumerate(headers[:MAX_BLOCKS]):
        end = headers[i + 1].start() if i + 1 < len(headers) else len(section)
        blocks.append((m["title"], section[m.end() : end].strip("\n").split("\n")))
    return blocks


def _line_blocks(section: str) -> list[tuple[str | None, list[str]]]:
    blocks: list[tuple[str | None, list[str]]] = []
    current: list[str] = []
    for line in section.strip("\n").split("\n")[: MAX_BLOCKS * 4]:
        current.append(line)
        if not line.startswith("E ") and re.match(r"^\S+:\d+: ", line):
            blocks.append((None, current))
            current = []
    return blocks


def _untitled(entries: list[_Entry], names: list[str | None]) -> list[int]:
    """Entries no block title names (pytest-mypy's "test session" block is ``…::mypy-status``)."""
    named = {n for n in names if n}
    return [i for i, e in enumerate(entries) if not any(_matches(e.id, n) for n in named)]


def _block_failure(
    title: str | None,
    lines: list[str],
    category: str,
    entries: list[_Entry],
    claims: tuple[set[int], list[int]],
    root: str,
) -> Failure:
    tb = parse_traceback(lines, root)
    crash = next((m for line in lines[:3] if (m := _WORKER_CRASH.search(line))), None)
    if crash is not None:
        return _worker_crash_failure(crash["id"], crash.group(0), entries, claims[0])
    name, kind = _title_name(title)
    if kind is Kind.BUILD:  # "ERROR collecting <path>": the path is the id, relative to rootdir
        claims = (claims[0], [])
        tb = in_words(lines, tb)
    entry = _claim(name, category, entries, claims)
    node_id = entry.id if entry else _guess_id(name, tb, kind)
    error_type, message = tb.error_type, tb.message
    if entry and not (error_type and message):
        etype, emsg = split_exception(entry.text)
        error_type, message = error_type or etype, message or emsg
    error_type, message, detail = doctest_failure(lines, error_type, message, tb.detail)
    return _failure(kind, node_id, tb, error_type, message, detail)


def _failure(
    kind: Kind, node_id: str, tb: Traceback, error_type: str, message: str, detail: tuple[str, ...]
) -> Failure:
    where = tb.frames[-1] if tb.frames else tb.location
    return Failure(
        kind=kind,
        id=node_id,
        file=where.file if where else _id_file(node_id),
        line=where.line if where else None,
        error_type=error_type,
        message=message,
        frames=tb.frames,
        detail=detail,
    )


def _title_name(title: str | None) -> tuple[str | None, Kind]:
    if title is None:
        return None, Kind.TEST
    if title.startswith("ERROR collecting "):
        return title.removeprefix("ERROR collecting "), Kind.BUILD
    m = _ERROR_TITLE.match(title)
    if m:
        return m["name"], Kind.TEST
    return title.removeprefix("[doctest] "), Kind.TEST


def _claim(
    name: str | None, category: str, entries: list[_Entry], claims: tuple[set[int], list[int]]
) -> _Entry | None:
    """The summary entry this block belongs to: same short name, else the next untitled one in order."""
    used, untitled = claims
    for i, entry in enumerate(entries):
        if i not in used and entry.category == category and _matches(entry.id, name):
            used.add(i)
            return entry
    if name is not None and _TEST_NAME.match(name):
        return None  # a test whose summary line was not read (past MAX_FAILURES): not another's
    for i in untitled:  # blocks and entries come in the same order
        if i not in used and entries[i].category == category:
            used.add(i)
            return entries[i]
    return None


def _matches(node_id: str, name: str | None) -> bool:
    if name is None:
        return False
    if node_id == name:
        return True
    _, sep, rest = node_id.partition("::")
    if not sep:
        return False
    base, bracket, params = rest.partition("[")
    return base.replace("::", ".") + bracket + params == name


def _guess_id(name: str | None, tb: Traceback, kind: Kind) -> str:
    if name is None:
        return tb.frames[0].file if tb.frames else "pytest"
    if kind is Kind.BUILD or "::" in name or not tb.frames:
        return name
    base, bracket, params = name.partition("[")
    return f"{tb.frames[0].file}::{base.replace('.', '::')}{bracket}{params}"


def _id_file(node_id: str) -> str:
    return node_id.partition("::")[0]


def _entry_failure(entry: _Entry) -> Failure:
    error_type, message = split_exception(entry.text)
    if not error_type and message.startswith("assert "):
        error_type = "AssertionError"  # pytest's rewritten bare assert
    crash = _WORKER_CRASH.search(entry.text)
    return Failure(
        kind=Kind.CRASH if crash else Kind.TEST,
        id=entry.id,
        file=_id_file(entry.id),
        error_type="worker crashed" if crash else error_type,
        message=message,
    )


def _worker_crash_failure(
    node_id: str, line: str, entries: list[_Entry], used: set[int]
) -> Failure:
    for i, entry in enumerate(entries):
        if entry.id == node_id:
            used.add(i)
    return Failure(
        kind=Kind.CRASH,
        id=node_id,
        file=_id_file(node_id),
        error_type="worker crashed",
        message=line,
    )


def _crashes(text: str, root: str) -> tuple[list[Failure], tuple[str, ...]]:
    """xdist workers that died, and a process killed by a fatal signal (faulthandler's dump)."""
    killed = [m["id"] for m in _WORKER_CRASH.finditer(text)] if "' crashed while" in text else []
    failures: list[Failure] = []
    fatal = _FATAL.search(text) if "Fatal Python error: " in text else None
    if fatal is not None:
        dump = [
            m for m in _DUMP_FRAME.finditer(text, fatal.end()) if m.start() - fatal.end() < 200_000
        ]
        frames = tuple(
            Frame(file=relative(m["file"], root), line=int(m["line"]), function=m["func"])
            for m in reversed(dump[:MAX_BLOCKS])
        )
        node_id = _crashed_test(frames, text)
        killed.append(node_id)
        failures.append(
            Failure(
                kind=Kind.CRASH,
                id=node_id,
                file=_id_file(node_id),
                line=next((f.line for f in reversed(frames) if node_id.startswith(f.file)), None),
                error_type=fatal["what"].strip(),
                message=fatal.group(0).strip(),
                frames=frames,
            )
        )
    return failures, tuple(dict.fromkeys(killed))


def _startup_crash(text: str, root: str) -> list[Failure]:
    """pytest stopped before its session began, with no report: its conftest would not import
    (click's tests/conftest.py imports click, and a SyntaxError seeded in src/click/utils.py ends
    there, exit 4), or pytest died importing itself (pluggy's own suite: pytest imports the
    pluggy under test). The traceback names the line."""
    conftest = _CONFTEST_ERROR.search(text)
    if conftest is not None:
        start, name = conftest.end(), relative(conftest["path"], root)
        what = f"pytest could not load {name}: no test ran"
    else:
        start, name, what = (
            text.find(_STARTUP_TRACEBACK),
            "pytest",
            "pytest could not start: no test ran",
        )
    if start < 0 or _SESSION_BANNER in text[:start]:
        return []
    tb = parse_traceback(text[start:].splitlines(), root)
    if not tb.error_type:
        return []
    last = tb.frames[-1] if tb.frames else None
    return [
        Failure(
            kind=Kind.CRASH,
            id=name,
            file=last.file if last else "",
            line=last.line if last else None,
            error_type=tb.error_type,
            message=tb.message,
            frames=tb.frames,
            detail=(what,),
        )
    ]


def _with_internal_error(result: ParseResult, text: str, root: str) -> ParseResult:
    """The INTERNALERROR after the tests that failed before it, ahead of what it caused (the
    usage line optparse printed before exiting, warnings)."""
    internal = _internal_error(text, root)
    if not internal:
        return result
    tests = tuple(f for f in result.failures if f.kind is Kind.TEST)
    others = tuple(f for f in result.failures if f.kind is not Kind.TEST)
    return replace(result, failures=(*tests, *internal, *others))


def _internal_error(text: str, root: str) -> list[Failure]:
    """pytest's INTERNALERROR (exit 3): an exception escaped its session, every line prefixed
    ``INTERNALERROR> ``. The place is the deepest frame outside the standard library: a project
    module raising SystemExit at import (mccabe's ``__main__`` guard flipped: optparse exits 2),
    the project's own plugin or conftest hook; or pytest's, a plugin's, a library's frame, which
    classify leaves an environment failure."""
    if _INTERNAL not in text:
        return []
    lines = [ln[len(_INTERNAL) :] for ln in text.splitlines() if ln.startswith(_INTERNAL)]
    tb = parse_traceback(lines, root)
    if not tb.error_type:
        return []
    mine = [f for f in tb.frames if not _standard_library(f.file)]
    where = mine[-1] if mine else (tb.frames[-1] if tb.frames else None)
    frames = tb.frames[: tb.frames.index(where) + 1] if where else ()
    return [
        Failure(
            kind=Kind.CRASH,
            id="pytest",
            file=where.file if where else "",
            line=where.line if where else None,
            code=INTERNAL_ERROR,
            error_type=tb.error_type,
            message=tb.message,
            frames=frames,
            detail=tb.detail,
        )
    ]


def _standard_library(file: str) -> bool:
    """``<frozen importlib._bootstrap>``, ``/usr/lib/python3.11/argparse.py``: not a package."""
    if file.startswith("<"):
        return True
    return file.startswith("/") and "/lib/python" in file and not in_dependencies(file)


def _crashed_test(frames: tuple[Frame, ...], text: str) -> str:
    progress = [m["file"] for m in _PROGRESS.finditer(text[:HEAD])]
    for frame in reversed(frames):  # innermost first
        if not frame.function.startswith("test"):
            continue
        file = frame.file
        for shown in reversed(progress):
            if file == shown or file.endswith("/" + shown):
                file = shown
                break
        return f"{file}::{frame.function}"
    return progress[-1] if progress else "pytest"


def _usage_errors(text: str, counts: Counts) -> list[Failure]:
    if counts.ran or not ("ERROR: " in text or "pytest: error: " in text):
        return []
    return [
        Failure(kind=Kind.BUILD, id="pytest", error_type="UsageError", message=m["msg"].strip())
        for m in _USAGE.finditer(text)
        if "usage:" not in m["msg"]
    ][:5]


def _warnings(section: str, root: str) -> list[Failure]:
    failures: list[Failure] = []
    current = ""
    for line in section.split("\n"):
        if line and not line[0].isspace():  # a heading: the test, or where it was raised
            current = line.strip() if "::" in line else ""
            continue
        m = _WARN_LOC.match(line)
        if m is None:
            continue
        file = relative(m["file"], root)
        failures.append(
            Failure(
                kind=Kind.WARNING,  # the test under its heading passed or failed on its own
                id=f"{file}:{m['line']}",
                file=file,
                line=int(m["line"]),
                error_type=m["type"],
                message=m["msg"].strip(),
                detail=(f"in {current}",) if current else (),
                severity="warning",
            )
        )
        if len(failures) >= MAX_WARNINGS:
            break
    return failures


def _order(failures: list[Failure], entries: list[_Entry]) -> list[Failure]:
    """The order the run reported them in (the short summary), blocks without an entry last."""
    by_id = {e.id: i for i, e in reversed(list(enumerate(entries)))}
    return sorted(failures, key=lambda f: by_id.get(f.id, len(entries)))


def _dedupe(failures: list[Failure]) -> tuple[Failure, ...]:
    seen: set[tuple[str, str, str]] = set()
    out: list[Failure] = []
    for f in failures:
        key = (f.id, f.error_type, f.message)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return tuple(out)


def _incomplete_note(text: str) -> str:
    progress = [m["file"] for m in _PROGRESS.finditer(text[:HEAD])]
    where = f" while running {progress[-1]}" if progress else ""
    return f"pytest stopped without its closing summary{where}: the run is incomplete"

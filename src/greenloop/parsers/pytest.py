"""pytest: structured plugin records when present, else the terminal text (any --tb style, -q/-v/-rA, xdist).

The text parse reads the FAILURES/ERRORS blocks for frames and messages and the short test summary for
exact node ids; the closing summary line decides whether the run completed (seed 003: a run without it
is incomplete, never "N passed").
"""

from __future__ import annotations

import re
from dataclasses import replace

from greenloop.parsers import pytest_artifacts
from greenloop.parsers.model import (
    Counts,
    Failure,
    Kind,
    ParseResult,
    ParserInput,
)
from greenloop.parsers.pytest_counts import count_collected, parse_counts
from greenloop.parsers.pytest_crashes import (
    WORKER_CRASH,
    find_crashes,
    incomplete_note,
    startup_crash,
    with_internal_error,
    with_thread_timeout,
)
from greenloop.parsers.pytest_extras import (
    with_coverage_gate,
    with_explained_lines,
    with_raised_elsewhere,
)
from greenloop.parsers.pytest_sections import (
    HEAD,
    MAX_FAILURES,
    TAIL,
    Entry,
    id_file,
    outer_summary,
    read_entries,
    split_blocks,
    split_sections,
)
from greenloop.parsers.pytraceback import (
    Traceback,
    doctest_failure,
    in_words,
    parse_traceback,
    relative,
    split_exception,
)

MAX_WARNINGS = 50
_USAGE = re.compile(r"^(?:pytest: error|ERROR): (?!usage:)(?P<msg>[^\n]+)$", re.MULTILINE)
_WARN_LOC = re.compile(r"^\s+(?P<file>[^\s:][^:\n]*):(?P<line>\d+): (?P<type>\w+): (?P<msg>.*)$")
# a block title that is a test's own name (``test_x[a-1]``, ``TestX.test_y``), not pytest-mypy's
# ``test session`` or ``[mypy] pkg/mod.py``
_PROGRESS_FILE = re.compile(r"^(?P<file>\S+\.py) [.FEsxXR]+(?:[ \t]+\[ *\d+%\])?[ \t]*$", re.M)
_TEST_MODULE = re.compile(r"^(?:test_.*|.*_test)\.py$")  # pytest's default python_files
_TEST_NAME = re.compile(r"^[A-Za-z_][\w.]*(?:\[.*\])?$")
_ERROR_TITLE = re.compile(r"^ERROR (?:at (?P<phase>setup|teardown) of |collecting )(?P<name>.+)$")
PYTEST_INTERNAL = 3  # pytest's exit code for an INTERNALERROR
# pytest (8.4+) fails an async test no plugin runs with this block, not a traceback
NOT_NATIVE = "async def functions are not natively supported"


def parse(inp: ParserInput) -> ParseResult:
    text = inp.stdout + "\n" + inp.stderr if inp.stderr else inp.stdout
    counts = parse_counts(inp.stdout[-TAIL:] + "\n" + inp.stderr[-TAIL:])
    if counts.collected is None:
        counts = replace(counts, collected=count_collected(text[:HEAD]))
    result = parse_text(text, inp.root, counts)
    plugin = pytest_artifacts.read(inp.artifacts, inp.root)
    if plugin is not None:
        result = pytest_artifacts.combine(plugin, result)
    result = with_explained_lines(with_raised_elsewhere(result), text[:HEAD], inp.root)
    result = with_thread_timeout(result, text, inp.root)
    if inp.exit_code == PYTEST_INTERNAL:  # pytester's output in a passing test may show one too
        result = with_internal_error(result, text, inp.root)
    return with_coverage_gate(result, text) if inp.exit_code else result


def parse_text(text: str, root: str, counts: Counts) -> ParseResult:
    sections = split_sections(text)
    outer = outer_summary(text)
    if outer is not None:
        sections["short test summary info"] = outer
    entries = read_entries(sections.get("short test summary info", ""), text)
    failures: list[Failure] = []
    used: set[int] = set()
    blocks = {name: split_blocks(sections.get(name, "")) for name in ("ERRORS", "FAILURES")}
    printed = tuple(dict.fromkeys(m["file"] for m in _PROGRESS_FILE.finditer(text)))
    untitled = _untitled(entries, [_title_name(t)[0] for b in blocks.values() for t, _ in b])
    for section, category in (("ERRORS", "ERROR"), ("FAILURES", "FAILED")):
        for title, lines in blocks[section]:
            claims = (used, untitled)
            block = _block_failure(title, lines, category, entries, claims, root, printed)
            failures.append(block)
    if outer is not None and len(entries) < MAX_FAILURES:  # every failure has its summary line:
        named = {e.id for e in entries}  # a block none names is an inner session's
        failures = [f for f in failures if f.id in named or f.kind is not Kind.TEST]
    for i, entry in enumerate(entries):
        if i not in used and len(failures) < MAX_FAILURES:
            failures.append(_entry_failure(entry))
    crashes, killed = find_crashes(text, root)
    failures = _order(failures, entries) + crashes
    if not failures and not counts.summary_seen:
        failures = startup_crash(text, root)
    failures += _usage_errors(text, counts)
    failures += _warnings(sections.get("warnings summary", ""), root)
    notes = () if counts.summary_seen else (incomplete_note(text),)
    return ParseResult(
        tool="pytest",
        failures=_dedupe(failures),
        counts=counts,
        killed=killed,
        notes=notes,
    )


def _untitled(entries: list[Entry], names: list[str | None]) -> list[int]:
    """Entries no block title names (pytest-mypy's "test session" block is ``…::mypy-status``)."""
    named = {n for n in names if n}
    return [i for i, e in enumerate(entries) if not any(_matches(e.id, n) for n in named)]


def _block_failure(
    title: str | None,
    lines: list[str],
    category: str,
    entries: list[Entry],
    claims: tuple[set[int], list[int]],
    root: str,
    printed: tuple[str, ...] = (),
) -> Failure:
    tb = parse_traceback(lines, root)
    crash = next((m for line in lines[:3] if (m := WORKER_CRASH.search(line))), None)
    if crash is not None:
        return _worker_crash_failure(crash["id"], crash.group(0), entries, claims[0])
    name, kind = _title_name(title)
    if kind is Kind.BUILD:  # "ERROR collecting <path>": the path is the id, relative to rootdir
        claims = (claims[0], [])
        tb = in_words(lines, tb)
    entry = _claim(name, category, entries, claims)
    node_id = entry.id if entry else _guess_id(name, tb, kind, printed)
    error_type, message = tb.error_type, tb.message
    if not message and lines and lines[0].startswith(NOT_NATIVE):  # pytest's fail(), no traceback
        error_type, message = "Failed", lines[0].strip()
    if entry and not (error_type and message):
        etype, emsg = split_exception(entry.text)
        error_type, message = error_type or etype, message or emsg
    error_type, message, detail = doctest_failure(lines, error_type, message, tb.detail)
    failure = _failure(kind, node_id, tb, error_type, message, detail)
    phase = _ERROR_TITLE.match(title or "")
    return replace(failure, phase=phase["phase"] or "") if phase else failure


def _failure(
    kind: Kind, node_id: str, tb: Traceback, error_type: str, message: str, detail: tuple[str, ...]
) -> Failure:
    where = tb.frames[-1] if tb.frames else tb.location
    return Failure(
        kind=kind,
        id=node_id,
        file=where.file if where else id_file(node_id),
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
    name: str | None, category: str, entries: list[Entry], claims: tuple[set[int], list[int]]
) -> Entry | None:
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


def _guess_id(name: str | None, tb: Traceback, kind: Kind, printed: tuple[str, ...] = ()) -> str:
    """Without pytest's short summary (``-rN``, or cut away) the id is the section's name in the
    file pytest ran it from. A traceback's first frame is that file only when pytest printed it
    (its progress lines), or could have collected it: a test a mixin or base class defines
    elsewhere has that other file there. When no file is known, the name as pytest printed it."""
    if name is None:
        return tb.frames[0].file if tb.frames else "pytest"
    if kind is Kind.BUILD or "::" in name or not tb.frames:
        return name
    file = tb.frames[0].file
    if printed and file not in printed:
        file = printed[0] if len(printed) == 1 else ""
    elif not printed and not _TEST_MODULE.match(file.rsplit("/", 1)[-1]):
        file = ""
    base, bracket, params = name.partition("[")
    return f"{file}::{base.replace('.', '::')}{bracket}{params}" if file else name


def _entry_failure(entry: Entry) -> Failure:
    error_type, message = split_exception(entry.text)
    if not error_type and message.startswith("assert "):
        error_type = "AssertionError"  # pytest's rewritten bare assert
    crash = WORKER_CRASH.search(entry.text)
    return Failure(
        kind=Kind.CRASH if crash else Kind.TEST,
        id=entry.id,
        file=id_file(entry.id),
        error_type="worker crashed" if crash else error_type,
        message=message,
    )


def _worker_crash_failure(node_id: str, line: str, entries: list[Entry], used: set[int]) -> Failure:
    for i, entry in enumerate(entries):
        if entry.id == node_id:
            used.add(i)
    return Failure(
        kind=Kind.CRASH,
        id=node_id,
        file=id_file(node_id),
        error_type="worker crashed",
        message=line,
    )


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


def _order(failures: list[Failure], entries: list[Entry]) -> list[Failure]:
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

"""The greenloop pytest plugin's JSON lines (see greenloop_pytest_plugin.py) -> Failures + Counts.

xdist: workers and the controller each write a file and the controller re-reports every worker
result, so records are deduplicated by (nodeid, when), preferring the worker's (it has the live
exception: function names and source lines).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

from greenloop.parsers.model import Counts, Failure, Frame, Kind, ParseResult
from greenloop.parsers.pytraceback import (
    MAX_DETAIL,
    doctest_failure,
    in_words,
    parse_traceback,
    relative,
    split_exception,
)

TYPE_CHECKING = False  # not typing's: the Stop hook imports this on every agent turn (issue 16)
if TYPE_CHECKING:
    from typing import Any

PREFIX = "pytest-plugin/"
MAX_FAILURES = 500
_CRASHED = "crashed while running"


@dataclass(frozen=True, slots=True, kw_only=True)
class PluginRun:
    """What greenloop's pytest plugin recorded of a run (its JSON lines, read back)."""

    failures: tuple[Failure, ...] = ()
    counts: Counts = field(default_factory=Counts)
    killed: tuple[str, ...] = ()
    finished: bool = False
    python: str = ""
    site_copies: tuple[tuple[str, str], ...] = ()
    outcomes: tuple[tuple[str, str], ...] = ()


@dataclass(slots=True)
class _Records:
    """The plugin's records gathered line by line, before they become a PluginRun."""

    reports: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    collect_errors: dict[str, dict[str, Any]] = field(default_factory=dict)
    started: dict[str, None] = field(default_factory=dict)
    collected: int | None = None
    finished: bool = False
    sessions: int = 0
    python: str = ""
    site_copies: dict[str, str] = field(default_factory=dict)


def read(artifacts: tuple[tuple[str, str], ...], root: str) -> PluginRun | None:
    """The plugin's view of the run, or None when it left no records (not loaded, not pytest)."""
    records = _Records()
    for name, text in artifacts:
        if name.startswith(PREFIX):
            _load(text, records)
    if records.sessions == 0:
        return None
    return PluginRun(
        failures=_failures(records, root),
        counts=_counts(records),
        killed=_killed(records),
        finished=records.finished,
        python=records.python,
        site_copies=tuple(sorted(records.site_copies.items())),
        outcomes=_outcomes(records),
    )


# a test's outcome from its phases' reports: the worst one wins (a teardown error spoils a pass)
_RANK = {"passed": 0, "xpassed": 1, "skipped": 2, "xfailed": 3, "failed": 4, "error": 5}


def _outcomes(records: _Records) -> tuple[tuple[str, str], ...]:
    """(node id, outcome) per test, in the order they were reported; a collection error is its
    file's (or class's) ``error``; a failed subtest makes its test ``failed``."""
    found: dict[str, str] = dict.fromkeys(records.collect_errors, "error")
    for (nodeid, when), rep in records.reports.items():
        outcome = _phase_outcome(when, rep)
        if outcome is None:
            continue
        if rep.get("subtest"):
            parent = nodeid.split(" ", 1)[0]
            if outcome == "failed" and parent != nodeid:
                found[parent] = _worse(found.get(parent), "failed")
        found[nodeid] = _worse(found.get(nodeid), outcome)
    return tuple(found.items())


def _phase_outcome(when: str, rep: dict[str, Any]) -> str | None:
    outcome, xfail = rep.get("outcome"), rep.get("wasxfail") is not None
    if outcome == "skipped":
        return "xfailed" if xfail else "skipped"
    if outcome == "failed":
        return "failed" if when in ("call", "???") else "error"
    if outcome == "passed" and when == "call":
        return "xpassed" if xfail else "passed"
    return None  # a setup or teardown that passed says nothing of the test


def _worse(known: str | None, outcome: str) -> str:
    return outcome if known is None or _RANK[outcome] > _RANK[known] else known


def phase_cpu(artifacts: tuple[tuple[str, str], ...]) -> tuple[float, float] | None:
    """CPU seconds of the main pytest process at its configure (start-up) and at the end of its
    collection, from the plugin's records; None when they are not there (xdist, an old plugin)."""
    for name, text in artifacts:
        if not name.startswith(PREFIX) or '"worker": ""' not in text:
            continue
        marks: dict[str, float] = {}
        for line in text.splitlines()[:2000]:
            record = json.loads(line) if '"cpu": ' in line else None
            if isinstance(record, dict) and isinstance(record.get("cpu"), float):
                marks.setdefault(str(record.get("event")), record["cpu"])
            if len(marks) == 2:
                return marks.get("session", 0.0), marks.get("collected", 0.0)
    return None


def reruns(artifacts: tuple[tuple[str, str], ...]) -> tuple[tuple[str, bool], ...]:
    """(node id, passed the second time) of each failed test the plugin ran once more."""
    found: dict[str, bool] = {}
    for name, text in artifacts:
        if name.startswith(PREFIX) and '"event": "rerun"' in text:
            for line in text.splitlines():
                if line.startswith('{"event": "rerun"'):
                    record = json.loads(line)
                    found[str(record.get("nodeid"))] = record.get("passed") is True
    return tuple(found.items())


def _load(text: str, records: _Records) -> None:
    main = False
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a line cut by a kill
        if not isinstance(record, dict):
            continue
        event = record.get("event")
        if event == "session":
            records.sessions += 1
            main = not record.get("worker")
            records.python = str(record.get("python") or records.python)
        elif event == "collected" and isinstance(record.get("count"), int):
            records.collected = max(records.collected or 0, record["count"])
        elif event == "collecterror":
            records.collect_errors.setdefault(str(record.get("nodeid")), record)
        elif event == "start":
            records.started[str(record.get("nodeid"))] = None
        elif event == "report":
            _add_report(record, records)
        elif event == "finish":
            records.finished = records.finished or main
            _add_site_copies(record.get("site_copies"), records)


def _add_site_copies(found: object, records: _Records) -> None:
    """Every process's (xdist workers' too): a worker may import what the main process did not."""
    if isinstance(found, dict):
        records.site_copies.update((str(k), str(v)) for k, v in found.items())


def _add_report(record: dict[str, Any], records: _Records) -> None:
    key = (str(record.get("nodeid")), str(record.get("when")))
    known = records.reports.get(key)
    if known is None or (record.get("exception") and not known.get("exception")):
        records.reports[key] = record


def _counts(records: _Records) -> Counts:
    tally = {"passed": 0, "failed": 0, "errors": len(records.collect_errors), "skipped": 0}
    tally |= {"xfailed": 0, "xpassed": 0, "subtests_passed": 0}
    for (_, when), rep in records.reports.items():
        outcome, xfail = rep.get("outcome"), rep.get("wasxfail") is not None
        if rep.get("subtest") and outcome in ("passed", "failed"):
            # as pytest counts them: a failed subtest is a failure, its test passes on its own
            tally["subtests_passed" if outcome == "passed" else "failed"] += 1
        elif outcome == "skipped":
            tally["xfailed" if xfail else "skipped"] += 1
        elif when in ("call", "???") and outcome == "failed":
            tally["failed"] += 1
        elif outcome == "failed":
            tally["errors"] += 1
        elif when == "call" and outcome == "passed":
            tally["xpassed" if xfail else "passed"] += 1
    return Counts(collected=records.collected, summary_seen=records.finished, **tally)


def _killed(records: _Records) -> tuple[str, ...]:
    killed = [
        nodeid
        for (nodeid, _), rep in records.reports.items()
        if _CRASHED in str(rep.get("text") or "")
    ]
    if not records.finished:
        done = {nodeid for (nodeid, when) in records.reports if when in ("teardown", "???")}
        killed += [nodeid for nodeid in records.started if nodeid not in done]
    return tuple(dict.fromkeys(killed))


def _failures(records: _Records, root: str) -> tuple[Failure, ...]:
    failures = [
        _collect_failure(nodeid, rec, root) for nodeid, rec in records.collect_errors.items()
    ]
    for (nodeid, when), rep in records.reports.items():
        if rep.get("outcome") == "failed" and len(failures) < MAX_FAILURES:
            failure = _report_failure(nodeid, rep, root)
            phase = when if when in ("setup", "teardown") else ""
            failures.append(replace(failure, phase=phase) if phase else failure)
    return tuple(failures)


def _collect_failure(nodeid: str, rec: dict[str, Any], root: str) -> Failure:
    lines = str(rec.get("text") or "").splitlines()
    tb = in_words(lines, parse_traceback(lines, root))
    where = tb.frames[-1] if tb.frames else None
    return Failure(
        kind=Kind.BUILD,
        id=nodeid,
        file=where.file if where else nodeid,
        line=where.line if where else None,
        error_type=tb.error_type,
        message=tb.message,
        frames=tb.frames,
        detail=tb.detail,
    )


def _report_failure(nodeid: str, rep: dict[str, Any], root: str) -> Failure:
    text = str(rep.get("text") or "")
    if _CRASHED in text:
        said = next((ln for ln in text.splitlines() if _CRASHED in ln), text)
        return Failure(
            kind=Kind.CRASH,
            id=nodeid,
            file=nodeid.partition("::")[0],
            error_type="worker crashed",
            message=said.strip(),
        )
    error_type, message, detail = _exception_text(rep)
    frames = _frames(rep, root)
    if not frames and text:
        tb = parse_traceback(text.splitlines(), root)
        frames, detail = tb.frames, detail or tb.detail
        error_type, message = error_type or tb.error_type, message or tb.message
    if error_type.startswith(
        "doctest."
    ):  # where the example is, its own traceback: in the text only
        tb = parse_traceback(text.splitlines(), root)
        frames = tb.frames or ((tb.location,) if tb.location else frames)
    error_type, message, detail = doctest_failure(text.splitlines(), error_type, message, detail)
    crash = rep.get("crash") if isinstance(rep.get("crash"), dict) else {}
    file = relative(str(crash.get("path") or ""), root) if crash else ""
    raw_line = crash.get("lineno") if crash else None
    line = raw_line if isinstance(raw_line, int) else None
    if frames and (not file or line is None):
        file, line = frames[-1].file, frames[-1].line
    return Failure(
        kind=Kind.TEST,
        id=nodeid,
        file=file or nodeid.partition("::")[0],
        line=line,
        error_type=error_type,
        message=message,
        frames=frames,
        detail=detail,
    )


def _exception_text(rep: dict[str, Any]) -> tuple[str, str, tuple[str, ...]]:
    exc = rep.get("exception") if isinstance(rep.get("exception"), dict) else None
    crash = rep.get("crash") if isinstance(rep.get("crash"), dict) else None
    notes: tuple[str, ...] = ()
    if exc:
        error_type, text = str(exc.get("type") or ""), str(exc.get("message") or "")
        notes = tuple(ln.strip() for ln in str(exc.get("notes") or "").splitlines() if ln.strip())
    elif crash:
        lines = str(crash.get("message") or "").split("\n", 1)
        error_type, first = split_exception(lines[0])
        text = first + ("\n" + lines[1] if len(lines) > 1 else "")
    else:
        return "", "", ()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return error_type, "", notes[:MAX_DETAIL]
    return error_type, lines[0], (*lines[1 : 1 + MAX_DETAIL], *notes[:MAX_DETAIL])


def _frames(rep: dict[str, Any], root: str) -> tuple[Frame, ...]:
    exc = rep.get("exception") if isinstance(rep.get("exception"), dict) else None
    raw = exc.get("frames") if exc else rep.get("entries")
    frames = []
    for item in raw or ():
        if isinstance(item, dict) and item.get("path"):
            frames.append(
                Frame(
                    file=relative(str(item["path"]), root),
                    line=item["lineno"] if isinstance(item.get("lineno"), int) else None,
                    function=str(item.get("function") or ""),
                    source=str(item.get("source") or ""),
                )
            )
    return tuple(frames)


def combine(plugin: PluginRun, text: ParseResult) -> ParseResult:
    """Plugin failures (exact ids and frames) + what only the text shows (crash dumps, warnings)."""
    if not plugin.failures and text.errors:
        failures = text.failures
    else:
        ids = {f.id for f in plugin.failures}
        extra = tuple(f for f in text.failures if f.id not in ids or f.severity != "error")
        failures = plugin.failures + extra
    counts = text.counts if text.counts.summary_seen else plugin.counts
    if counts.collected is None and plugin.counts.collected is not None:
        counts = replace(counts, collected=plugin.counts.collected)
    return ParseResult(
        tool="pytest",
        failures=failures,
        counts=counts,
        killed=tuple(dict.fromkeys(text.killed + plugin.killed)),
        notes=text.notes,
        python=plugin.python,
        site_copies=plugin.site_copies,
        outcomes=plugin.outcomes,
    )

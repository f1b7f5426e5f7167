"""JavaScript test runners: jest, vitest and node:test (TAP and spec reporters)."""

from __future__ import annotations

import re
from dataclasses import replace

from greenloop.parsers.generic import MAX_FAILURES, capped, relative, to_int
from greenloop.parsers.model import Counts, Failure, Frame, Kind

_ERROR = re.compile(r"^(?P<type>[\w.$]*(?:Error|Exception)|Error)(?: \[[\w.]+\])?: (?P<msg>.*)$")
_MATCHER = re.compile(r"^expect\(.*?\)\.(?:not\.|resolves\.|rejects\.)*(?P<m>\w+)\(")


def split_error(line: str) -> tuple[str, str]:
    """``TypeError: x`` -> (TypeError, x); ``expect(received).toEqual(expected)`` -> (toEqual, …)."""
    line = line.strip()
    m = _MATCHER.match(line)
    if m:
        return m["m"], line.split(" // ", 1)[0]
    e = _ERROR.match(line)
    if e:
        return e["type"], e["msg"].strip()
    return "", line


def js_frames(lines: list[str], root: str) -> tuple[Frame, ...]:
    """``at fn (file:line:col)`` / ``\u276f fn file:line:col`` lines, outermost call first."""
    frames = [f for line in lines if (f := _frame(line, root)) is not None]
    return tuple(reversed(frames[:30]))  # JS prints the innermost call first


def _frame(line: str, root: str) -> Frame | None:
    s = line.strip()
    if not s.startswith(("at ", "\u276f ")):
        return None
    s = s[2:].strip()
    if s.endswith(")") and " (" in s:
        fn, loc = s[:-1].rsplit(" (", 1)
    else:
        fn, _, loc = s.rpartition(" ")
    parts = loc.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit():
        return None
    fn = fn.removeprefix("async ").strip()
    return Frame(file=relative(parts[0], root), line=to_int(parts[1]), function=fn)


def project_frame(frames: tuple[Frame, ...]) -> Frame | None:
    """The innermost frame in the repository (not node internals, not node_modules)."""
    for frame in reversed(frames):
        if not frame.file.startswith(("/", "node:")) and "node_modules" not in frame.file:
            return frame
    return None


def _test_failure(id_: str, body: list[str], root: str, *, default_type: str = "") -> Failure:
    frames = js_frames(body, root)
    text = [b for b in body if b.strip() and not _is_frame(b)]
    error_type, message = split_error(text[0]) if text else ("", "")
    where = project_frame(frames)
    return Failure(
        kind=Kind.TEST,
        id=id_,
        file=where.file if where else "",
        line=where.line if where else None,
        error_type=error_type or default_type,
        message=message,
        frames=frames,
        detail=capped([b.rstrip() for b in text[1:]]),
    )


def _is_frame(line: str) -> bool:
    return _frame(line, "") is not None


# ---- jest ------------------------------------------------------------------------------------
_JEST_HEAD = re.compile(r"^  ● (?P<name>\S.*)$")
# `jest --color=true` pads its badge: " FAIL  test/x.test.ts" once the colours are stripped
_JEST_FILE = re.compile(r"^ ?(?:FAIL|PASS|RUNS)\s+(?P<file>\S+)")
_JEST_TESTS = re.compile(r"^Tests:\s++(?P<body>.*\d+ total)")
_JEST_KILLED = re.compile(
    r"(?P<what>A jest worker process \(pid=\d+\) was terminated by another process: signal=(?P<sig>\w+)"
    r"|A worker process has failed to exit gracefully|Call retries were exceeded)"
)


_JEST_RECAP = "Summary of all failing tests"


def parse_jest(lines: list[str], root: str) -> tuple[list[Failure], Counts, list[str]]:
    failures: list[Failure] = []
    suite = ""
    # with many test files jest repeats every failure under its recap, at the end: read those
    # once (the recap is whole even when the middle of a long output was cut)
    i = next((n for n, line in enumerate(lines) if line == _JEST_RECAP), 0)
    while i < len(lines) and len(failures) < MAX_FAILURES:
        line = lines[i]
        if (f := _JEST_FILE.match(line)) is not None:
            suite = f["file"]
        head = _JEST_HEAD.match(line)
        if not head:
            i += 1
            continue
        end = _jest_block_end(lines, i + 1)
        name = head["name"].strip()
        if name == "Test suite failed to run":
            name = suite or name
        failures.append(_test_failure(name, lines[i + 1 : end], root))
        i = end
    killed = _jest_killed(lines)
    # obsolete snapshots fail the run, not a test: jest's counts stay its own
    return failures + _jest_obsolete(lines), _jest_counts(lines, killed), killed


_JEST_SUMMARY_FILE = re.compile(r"^\s+↳ (?P<file>\S+)\s*$")
_JEST_SUMMARY_KEY = re.compile(r"^\s+• (?P<key>\S.*?)\s*$")


def _jest_obsolete(lines: list[str]) -> list[Failure]:
    """The Snapshot Summary's obsolete snapshots: a key no test wrote this run, the trace of a
    test removed or renamed. jest fails the run for them, with every test passing."""
    start = next((i for i, line in enumerate(lines) if line == "Snapshot Summary"), None)
    if start is None:
        return []
    found: list[Failure] = []
    file, obsolete = "", False
    for line in lines[start + 1 :]:
        if line.startswith(("Test Suites:", "Tests:")) or len(found) >= MAX_FAILURES:
            break
        if line.startswith(" \u203a "):  # " \u203a 1 snapshot obsolete from 1 test suite."
            obsolete = "obsolete" in line and "snapshot file" not in line
        elif obsolete and (f := _JEST_SUMMARY_FILE.match(line)) is not None:
            file = f["file"]
        elif obsolete and (k := _JEST_SUMMARY_KEY.match(line)) is not None:
            found.append(_obsolete_snapshot(file, k["key"]))
    return found


def _obsolete_snapshot(file: str, key: str, *, runner: str = "jest") -> Failure:
    fix = {
        "jest": "remove the snapshot with jest -u (--ci keeps it failing)",
        "vitest": "remove the snapshot with vitest -u (vitest passes the run with it)",
    }[runner]
    return Failure(
        kind=Kind.CRASH,
        id=f"{file}: {key}" if file else key,
        file=file,
        error_type="obsolete snapshot",
        message=f"no test wrote snapshot `{key}`: its test was removed or renamed",
        detail=(f"restore the test, or {fix}",),
        severity="error" if runner == "jest" else "warning",
    )


def _jest_killed(lines: list[str]) -> list[str]:
    killed: list[str] = []
    suite = ""
    for line in lines:
        if line.lstrip().startswith(("FAIL", "PASS", "RUNS")) and (f := _JEST_FILE.match(line)):
            suite = f["file"]
        elif "worker" in line or "retries" in line:
            k = _JEST_KILLED.search(line)
            if k:
                killed.append(f"{suite or 'jest worker'} ({k['sig'] or k['what']})")
    return killed


def _jest_block_end(lines: list[str], start: int) -> int:
    for j in range(start, min(len(lines), start + 400)):
        s = lines[j]
        if s.startswith(("  ● ", "Test Suites:", "Tests:", "FAIL ", "PASS ", " FAIL ", " PASS ")):
            return j
    return min(len(lines), start + 400)


def _jest_counts(lines: list[str], killed: list[str]) -> Counts:
    m = next((m for line in reversed(lines) if (m := _JEST_TESTS.match(line))), None)
    if m is None:
        return Counts()
    values = {w: int(n) for n, w in re.findall(r"(?<!\d)(\d+) (\w+)", m["body"])}
    # a suite that failed to run (a syntax or type error in the code under test) is an error
    recap = next((n for n, line in enumerate(lines) if line == _JEST_RECAP), 0)
    suites = sum(1 for line in lines[recap:] if line.strip() == "● Test suite failed to run")
    return Counts(
        collected=values.get("total"),
        passed=values.get("passed", 0),
        failed=values.get("failed", 0),
        errors=suites,
        skipped=values.get("skipped", 0) + values.get("todo", 0),
        summary_seen=not killed,
    )


# ---- vitest ----------------------------------------------------------------------------------
_VITEST_HEAD = re.compile(r"^ FAIL  (?P<name>\S.*?)\s*$")
_VITEST_TESTS = re.compile(r"^\s+Tests\s+(?P<body>.*\(\d+\))\s*$")


def parse_vitest(lines: list[str], root: str) -> tuple[list[Failure], Counts]:
    failures: list[Failure] = []
    seen: set[str] = set()
    # under --retry=N a test that failed every try is listed once per try (`t 7ms (retry x2)`
    # in the run's list): one failed test. Without retries two tests may share a name
    retried = any("(retry x" in line for line in lines)
    i = 0
    while i < len(lines) and len(failures) < MAX_FAILURES:
        names = _vitest_heads(lines, i)
        if not names:
            i += 1
            continue
        start = end = i + len(names)  # vitest 4 lists the tests that failed alike, then one error
        while end < len(lines) and end - start < 400 and not _vitest_stop(lines[end]):
            end += 1
        body = _vitest_body(lines[start:end])
        new = [name for name in dict.fromkeys(names) if name not in seen] if retried else names
        seen.update(new)
        failures += [_test_failure(name, body, root) for name in new]
        i = end
    # an error outside the tests (a --typecheck type error in a source file) first: the cause
    found = _vitest_unhandled(lines, root) + failures[:MAX_FAILURES]
    return found + _vitest_obsolete(lines), _vitest_counts(lines)


_VITEST_OBSOLETE = re.compile(r"^\s+(?:Snapshots\s+)?\d+ obsolete\s*$")
_VITEST_SNAP_FILE = re.compile(r"^\s+↳ (?P<file>\S+)\s*$")
_VITEST_SNAP_KEY = re.compile(r"^\s+· (?P<key>\S.*?)\s*$")


def _vitest_obsolete(lines: list[str]) -> list[Failure]:
    """``Snapshots  1 obsolete / ↳ file / · key``: a snapshot no test wrote this run, the trace of
    a test removed or renamed. vitest passes the run anyway: a warning (a soft success), named."""
    start = next((i for i, line in enumerate(lines) if _VITEST_OBSOLETE.match(line)), None)
    if start is None:
        return []
    found: list[Failure] = []
    file = ""
    for line in lines[start + 1 :]:
        if (f := _VITEST_SNAP_FILE.match(line)) is not None:
            file = f["file"]
        elif (k := _VITEST_SNAP_KEY.match(line)) is not None and len(found) < MAX_FAILURES:
            found.append(_obsolete_snapshot(file, k["key"], runner="vitest"))
        else:
            break
    return found


def _vitest_heads(lines: list[str], start: int) -> list[str]:
    names: list[str] = []
    for line in lines[start:]:
        head = _VITEST_HEAD.match(line) if line.startswith(" FAIL  ") else None
        if head is None:
            break
        names.append(head["name"])
    return names


# "⎯⎯⎯ Unhandled Rejection ⎯⎯⎯", "… Unhandled Source Error …" (a --typecheck type error in a source
# file); "Unhandled Errors" heads the section
_VITEST_UNHANDLED = re.compile(r"^⎯+ (?P<what>Unhandled (?!Errors )[A-Z][\w ]*?) ⎯+$")


def _vitest_unhandled(lines: list[str], root: str) -> list[Failure]:
    """Errors vitest caught outside any test: the run fails though every test may have passed."""
    found: list[Failure] = []
    for i, line in enumerate(lines):
        m = _VITEST_UNHANDLED.match(line) if "Unhandled " in line else None
        if m is None or len(found) >= MAX_FAILURES:
            continue
        end = next((j for j in range(i + 1, len(lines)) if "⎯⎯" in lines[j]), len(lines))
        failure = _test_failure(m["what"], _vitest_body(lines[i + 1 : end]), root)
        place = f"{failure.file}:{failure.line}" if failure.file else m["what"]
        found.append(replace(failure, kind=Kind.CRASH, id=place))
    return found


_SOURCE = re.compile(r"^\s+\d+\|")
_CARET = re.compile(r"^\s+\|\s*\^")


def _vitest_body(block: list[str]) -> list[str]:
    """The code frame's context lines go; the caret stays, with the source line it points at."""
    body: list[str] = []
    for n, line in enumerate(block):
        if _CARET.match(line) and n and _SOURCE.match(block[n - 1]):
            body += [block[n - 1], line]
        elif not _SOURCE.match(line) and line.strip() != "|":
            body.append(line)
    return body


def _vitest_stop(line: str) -> bool:
    return line.startswith((" FAIL  ", "⎯⎯")) or "⎯⎯⎯" in line


_VITEST_SUITE = re.compile(r"^ FAIL  (?P<file>\S+) \[ (?P=file) \]")


def _vitest_counts(lines: list[str]) -> Counts:
    # a file that failed to load ("FAIL  f.ts [ f.ts ]", "Tests  no tests") is an error, as pytest's
    suites = sum(1 for line in lines if line.startswith(" FAIL  ") and _VITEST_SUITE.match(line))
    m = next(
        (
            m
            for line in lines
            if line.lstrip().startswith("Tests ") and (m := _VITEST_TESTS.match(line))
        ),
        None,
    )
    if m is None:
        return Counts(errors=suites, summary_seen=True) if suites else Counts()
    values = {w: int(n) for n, w in re.findall(r"(?<!\d)(\d+) (\w+)", m["body"])}
    total = re.search(r"\((\d+)\)", m["body"])
    return Counts(
        collected=int(total.group(1)) if total else None,
        passed=values.get("passed", 0),
        failed=values.get("failed", 0),
        skipped=values.get("skipped", 0) + values.get("todo", 0),
        errors=suites,
        summary_seen=True,
    )

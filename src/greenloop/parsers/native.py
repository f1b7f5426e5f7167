"""Builds and runners outside the script languages: gcc/clang behind make, ld, CTest, PHPUnit,
Maven Surefire and Gradle test output."""

from __future__ import annotations

import re
from dataclasses import replace

from greenloop.parsers.generic import MAX_FAILURES, capped, lines_of, relative, to_int
from greenloop.parsers.model import (
    MAKE_ERROR,
    Counts,
    Failure,
    Frame,
    Kind,
    ParseResult,
    ParserInput,
)

_CC = re.compile(
    r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?:(?P<col>\d+):)? (?P<sev>fatal error|error|warning|note): (?P<msg>.*)$"
)
_SEVERITY = re.compile(r": (?:fatal error|error|warning|note): ")
_FLAG = re.compile(r" \[(?P<flag>-W[\w=+-]+|-Werror[\w=+-]*)\]$")
_LD = re.compile(
    r"^(?:(?P<file>[^\s:]+):\([^)]*\): )?(?P<msg>undefined reference to .*|multiple definition of .*)$"
)
_MAKE = re.compile(r"^(?:g?make|mingw32-make)(?:\[\d+\])?: \*\*\* (?P<msg>.*)$")
_CTEST_RESULT = re.compile(
    # possessive runs: 20 000 spaces before the status took 2 s (issue 12's fuzzing)
    r"^\s*+\d+/\d+ Test\s++#\d+: (?P<name>\S+) \.*+\s*+(?P<status>\*\*\*Failed|Subprocess aborted|"
    r"\*\*\*Timeout|\*\*\*Exception|Exit code|[\w ]*+\*\*\*Exception[^\d]*|Passed|\*\*\*Not Run|Not Run)"
)
_OUTPUT_LOC = re.compile(r"^(?:[\w.-]+: )?([^\s:]+\.\w+):(\d+):? (.*)$")
_CTEST_SUMMARY = re.compile(
    r"^(?P<pct>\d+)% tests passed, (?P<failed>\d+) tests? failed out of (?P<total>\d+)"
)
_PHP_SECTION = re.compile(
    r"^There (?:was|were) \d+ (?P<kind>failures?|errors?|risky tests?|warnings?):$"
)
_PHP_ITEM = re.compile(r"^(?P<n>\d+)\) (?P<id>\S+)$")
_PHP_LOC = re.compile(r"^(?P<file>/?\S+\.php):(?P<line>\d+)$")
_PHP_SUMMARY = re.compile(
    r"^(?:Tests: (?P<tests>\d+), Assertions: \d+(?P<rest>.*)|OK \((?P<ok>\d+) tests?)"
)
_MVN_FAIL = re.compile(r"^\[ERROR\]\s+(?P<cls>[\w.$]+)\.(?P<test>\w+):(?P<line>\d+) (?P<msg>.*)$")
_MVN_TOTAL = re.compile(
    r"^\[(?:ERROR|WARNING|INFO)\] Tests run: (?P<run>\d+), Failures: (?P<f>\d+), Errors: (?P<e>\d+), "
    r"Skipped: (?P<s>\d+)$"
)
_MVN_COMPILE = re.compile(
    r"^\[ERROR\] (?P<file>\S+\.(?:java|kt|scala)):\[(?P<line>\d+),(?P<col>\d+)\] (?P<msg>.*)$"
)
_GRADLE_FAIL = re.compile(r"^(?P<cls>[\w.$]+) > (?P<test>.+?) FAILED$")
_GRADLE_SUMMARY = re.compile(
    r"^(?P<total>\d+) tests? completed, (?P<failed>\d+) failed(?:, (?P<skipped>\d+) skipped)?"
)


def parse(inp: ParserInput) -> ParseResult:
    lines = lines_of(inp)
    text = "\n".join(lines)
    failures: list[Failure] = []
    counts: list[Counts] = []
    killed: list[str] = []
    failures += _compiler(lines, inp.root)
    if "Test #" in text:
        found, c, k = _ctest(lines, inp.root)
        failures, killed = failures + found, killed + k
        counts.append(c)
    if "There w" in text or "Tests: " in text or "OK (" in text:
        found, c = _phpunit(lines, inp.root)
        failures += found
        counts.append(c)
    if "[ERROR]" in text or "Tests run:" in text:
        found, c = _maven(lines, inp.root)
        failures += found
        counts.append(c)
    if " FAILED" in text or "tests completed" in text:
        found, c = _gradle(lines)
        failures += found
        counts.append(c)
    failures += _make(lines, failures)
    seen = [c for c in counts if c.summary_seen]
    return ParseResult(
        tool="native",
        failures=tuple(failures[:MAX_FAILURES]),
        counts=seen[0] if seen else Counts(),
        killed=tuple(killed),
    )


def _compiler(lines: list[str], root: str) -> list[Failure]:
    failures: list[Failure] = []
    detail: list[str] = []
    for line in lines:
        m = _CC.match(line) if _SEVERITY.search(line) and line[:1] != " " else None
        if m and m["sev"] == "note":
            detail.append(line.strip())
            continue
        if m:
            _close(failures, detail)
            detail = []
            failures.append(_cc_failure(m, root))
        elif ld := (
            _LD.match(line)
            if "undefined reference" in line or "multiple definition" in line
            else None
        ):
            _close(failures, detail)
            detail = []
            failures.append(_ld_failure(ld, root))
        elif not failures:
            continue
        elif line[:1] == " " and len(detail) < 15:
            detail.append(line.rstrip())
        elif detail and line.strip():
            _close(failures, detail)
            detail = []
        if len(failures) >= MAX_FAILURES:
            break
    _close(failures, detail)
    return failures


def _close(failures: list[Failure], detail: list[str]) -> None:
    if failures and detail and not failures[-1].detail:
        failures[-1] = replace(failures[-1], detail=capped(detail))


def _cc_failure(m: re.Match[str], root: str) -> Failure:
    sev = "error" if m["sev"] == "fatal error" else m["sev"]
    message = m["msg"].strip()
    flag = _FLAG.search(message)
    code = flag["flag"] if flag else ""
    message = message[: flag.start()] if flag else message
    file = relative(m["file"], root)
    col = f":{m['col']}" if m["col"] else ""
    return Failure(
        kind=Kind.BUILD,
        id=f"{file}:{m['line']}{col} {code}".strip(),
        file=file,
        line=to_int(m["line"]),
        column=to_int(m["col"]),
        code=code,
        error_type=sev,
        message=message,
        severity="warning" if sev == "warning" else "error",
    )


def _ld_failure(m: re.Match[str], root: str) -> Failure:
    file = relative(m["file"] or "", root)
    return Failure(
        kind=Kind.BUILD,
        id=f"{file} {m['msg']}".strip(),
        file=file,
        code="ld",
        error_type="error",
        message=m["msg"],
    )


def _make(lines: list[str], failures: list[Failure]) -> list[Failure]:
    """make's own ``*** [target] Error 1``: the cause when nothing better was found."""
    if any(f.severity == "error" for f in failures):
        return []
    for line in lines:
        m = _MAKE.match(line) if "***" in line else None
        if m:
            return [
                Failure(kind=Kind.BUILD, id=m["msg"][:120], error_type=MAKE_ERROR, message=m["msg"])
            ]
    return []


def _ctest(lines: list[str], root: str) -> tuple[list[Failure], Counts, list[str]]:
    failures: list[Failure] = []
    killed: list[str] = []
    for i, line in enumerate(lines):
        m = _CTEST_RESULT.match(line) if "Test #" in line else None
        if not m or "Passed" in m["status"]:
            continue
        status = m["status"].strip("* ").strip()
        output = _until_blank(lines, i + 1)
        if "Exception" in status or "aborted" in status or "Timeout" in status:
            killed.append(f"{m['name']} ({status})")
        failures.append(_ctest_failure(m["name"], status, output, root))
    s = next((s for line in lines if (s := _CTEST_SUMMARY.match(line))), None)
    if s is None:
        return failures, Counts(), killed
    total, failed = int(s["total"]), int(s["failed"])
    counts = Counts(collected=total, passed=total - failed, failed=failed, summary_seen=not killed)
    return failures, counts, killed


def _until_blank(lines: list[str], start: int) -> list[str]:
    out: list[str] = []
    for line in lines[start : start + 100]:
        if not line.strip() or line.lstrip().startswith("Start "):
            break
        out.append(line)
    return out


def _ctest_failure(name: str, status: str, output: list[str], root: str) -> Failure:
    loc = next((m for o in output if (m := _OUTPUT_LOC.match(o))), None)
    return Failure(
        kind=Kind.TEST,
        id=name,
        file=relative(loc.group(1), root) if loc else "",
        line=to_int(loc.group(2)) if loc else None,
        error_type="Failed" if status == "Failed" else status,
        message=loc.group(3).strip() if loc else (output[0].strip() if output else status),
        detail=capped(output),
    )


def _phpunit(lines: list[str], root: str) -> tuple[list[Failure], Counts]:
    failures: list[Failure] = []
    kind = ""
    current: list[str] = []
    for line in lines:
        sec = _PHP_SECTION.match(line) if line.startswith("There w") else None
        item = _PHP_ITEM.match(line) if kind and line[:1].isdigit() else None
        if sec or item or line.startswith(("FAILURES!", "ERRORS!", "--")):
            _php_flush(failures, kind, current, root)
            current = [item["id"]] if item else []
            kind = sec["kind"] if sec else ("" if not item else kind)
        elif current and len(current) < 100:
            current.append(line)
    _php_flush(failures, kind, current, root)
    return failures[:MAX_FAILURES], _php_counts(lines)


def _php_flush(failures: list[Failure], kind: str, block: list[str], root: str) -> None:
    if not block or not kind.startswith(("failure", "error")):
        return
    body = [b for b in block[1:] if b.strip()]
    locs = [m for b in body if (m := _PHP_LOC.match(b.strip()))]
    text = [b.strip() for b in body if not _PHP_LOC.match(b.strip())]
    frames = tuple(
        Frame(file=relative(m["file"], root), line=to_int(m["line"])) for m in reversed(locs)
    )
    error_type, message = "", text[0] if text else ""
    e = re.match(r"^(?P<type>[A-Z][\w\\]*(?:Error|Exception)): (?P<msg>.*)$", message)
    if e:
        error_type, message = e["type"], e["msg"]
    where = next((f for f in reversed(frames) if "/vendor/" not in f.file), None)
    failures.append(
        Failure(
            kind=Kind.TEST,
            id=block[0],
            file=where.file if where else "",
            line=where.line if where else None,
            error_type=error_type,
            message=message,
            frames=frames,
            detail=capped(text[1:]),
        )
    )


def _php_counts(lines: list[str]) -> Counts:
    m = next((m for line in reversed(lines) if (m := _PHP_SUMMARY.match(line))), None)
    if m is None:
        return Counts()
    if m["ok"]:
        return Counts(collected=int(m["ok"]), passed=int(m["ok"]), summary_seen=True)
    values = {k.lower(): int(v) for k, v in re.findall(r"(?<!\w)(\w+): (\d+)", m["rest"])}
    tests = int(m["tests"])
    failed, errors = values.get("failures", 0), values.get("errors", 0)
    skipped = values.get("skipped", 0) + values.get("incomplete", 0)
    return Counts(
        collected=tests,
        passed=max(tests - failed - errors - skipped, 0),
        failed=failed,
        errors=errors,
        skipped=skipped,
        summary_seen=True,
    )


def _maven(lines: list[str], root: str) -> tuple[list[Failure], Counts]:
    failures: list[Failure] = []
    counts = Counts()
    for line in lines:
        if not line.startswith("["):
            continue
        t = _MVN_TOTAL.match(line)
        if t:  # the aggregate line (per-class lines end with "-- in Class" or "<<< FAILURE!")
            run, f, e, s = (int(t[k]) for k in ("run", "f", "e", "s"))
            counts = Counts(
                collected=run,
                passed=run - f - e - s,
                failed=f,
                errors=e,
                skipped=s,
                summary_seen=True,
            )
        elif (m := _MVN_FAIL.match(line)) is not None and len(failures) < MAX_FAILURES:
            failures.append(_mvn_test(m))
        elif (c := _MVN_COMPILE.match(line)) is not None and len(failures) < MAX_FAILURES:
            file = relative(c["file"], root)
            failures.append(
                Failure(
                    kind=Kind.BUILD,
                    id=f"{file}:{c['line']}:{c['col']}",
                    file=file,
                    line=to_int(c["line"]),
                    column=to_int(c["col"]),
                    error_type="error",
                    message=c["msg"].strip(),
                )
            )
    return failures, counts


def _mvn_test(m: re.Match[str]) -> Failure:
    cls = m["cls"]
    error_type, message = "", m["msg"].strip()
    e = (
        re.match(r"^(?P<type>[\w.$]*(?:Error|Exception|Failure)): ?(?P<msg>.*)$", message)
        if ":" in message
        else None
    )
    if e and " " not in e["type"]:
        error_type, message = e["type"], e["msg"]
    return Failure(
        kind=Kind.TEST,
        id=f"{cls}.{m['test']}",
        file=cls.replace(".", "/") + ".java",
        line=to_int(m["line"]),
        error_type=error_type,
        message=message,
    )


def _gradle(lines: list[str]) -> tuple[list[Failure], Counts]:
    failures: list[Failure] = []
    counts = Counts()
    for i, line in enumerate(lines):
        g = _GRADLE_FAIL.match(line) if line.endswith(" FAILED") else None
        if g and len(failures) < MAX_FAILURES:
            body = [b.strip() for b in lines[i + 1 : i + 12] if b.startswith("    ")]
            error_type, _, message = (body[0] if body else "").partition(":")
            if not message:
                error_type, message = "", error_type
            detail = capped([b for b in body[1:] if not b.startswith("at ")])
            failures.append(
                Failure(
                    kind=Kind.TEST,
                    id=f"{g['cls']} > {g['test']}",
                    error_type=error_type.strip(),
                    message=message.strip(),
                    detail=detail,
                )
            )
        s = _GRADLE_SUMMARY.match(line) if "tests completed" in line else None
        if s:
            total, failed, skipped = int(s["total"]), int(s["failed"]), int(s["skipped"] or 0)
            counts = Counts(
                collected=total,
                passed=total - failed - skipped,
                failed=failed,
                skipped=skipped,
                summary_seen=True,
            )
    return failures, counts

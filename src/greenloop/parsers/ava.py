"""ava: ``✘ [fail]: title`` lines, then one detail block per failure between ``─`` rules."""

from __future__ import annotations

import re

from greenloop.parsers.generic import MAX_FAILURES, capped, lines_of, relative, to_int
from greenloop.parsers.js_tests import js_frames, project_frame, split_error
from greenloop.parsers.model import Counts, Failure, Frame, Kind, ParseResult, ParserInput

# ava 6: "✘ [fail]: title message"; ava 3: "✖ title message"
_FAIL = re.compile(r"^ +(?:✘ \[fail\]:|✖) (?P<text>.+)$")
_PASS = re.compile(r"^ +✔ ")
_TOTAL = re.compile(
    r"^  (?P<n>\d+) (?:tests?|known failures?) (?P<what>passed|failed|skipped|todo)\b"
    r"|^  (?P<n2>\d+) (?P<what2>uncaught exceptions?|unhandled rejections?)$"
)
_LOCATION = re.compile(r"^  (?P<file>[^\s:]+):(?P<line>\d+)$")
# "\u203a test.js:5" (ava 6), "\u203a slugify (file://index.js:69:3)", "\u203a file://test.js:157:7" (ava 3)
_POINTER = re.compile(
    r"^  \u203a (?:(?P<fn>[^\s(]+) \()?(?:file://)?(?P<file>[^\s:()]+):(?P<line>\d+)(?::\d+)?\)?$"
)
# util.inspect of the error ava 3 caught: "ReferenceError {", "message: 'x is not defined',"
_INSPECTED = re.compile(r"^(?P<type>[A-Z]\w*(?:Error|Exception)|Error) \{$")
_INSPECTED_MESSAGE = re.compile(r"^message: (?P<q>['\"`])(?P<msg>.*)(?P=q),?$")
_SOURCE = re.compile(r"^ +\d+: ")
_RULE = "─"
_INSPECT = re.compile(r"^(?:(?:[A-Z]\w*)?(?:Error|Exception) \{|message: .*|\})$")  # util.inspect


def parse(inp: ParserInput) -> ParseResult:
    lines = lines_of(inp)
    fails = [
        m["text"].strip()
        for line in lines
        if "✘ [fail]" in line or "✖ " in line
        if (m := _FAIL.match(line))
    ]
    failures = _blocks(lines, fails, inp.root) if fails else []
    return ParseResult(tool="ava", failures=tuple(failures[:MAX_FAILURES]), counts=_counts(lines))


def _title(line: str, fails: list[str]) -> str | None:
    """A detail block starts with the test's title alone on a line, indented by two spaces."""
    if not line.startswith("  ") or line.startswith("   "):
        return None
    title = line.strip()
    return title if any(f == title or f.startswith(title + " ") for f in fails) else None


def _blocks(lines: list[str], fails: list[str], root: str) -> list[Failure]:
    failures: list[Failure] = []
    title, body = "", []
    for line in [*lines, _RULE]:
        found = _title(line, fails)
        if found is None and line.strip() != _RULE:
            body.append(line)
            continue
        if title:
            failures.append(_failure(title, body, root))
        title, body = (found or ""), []
    return failures


def _failure(title: str, body: list[str], root: str) -> Failure:
    where = next((m for b in body if (m := _LOCATION.match(b))), None)
    pointers = [
        Frame(file=relative(m["file"], root), line=to_int(m["line"]), function=m["fn"] or "")
        for b in body
        if (m := _POINTER.match(b))
    ]
    frames = (*js_frames(body, root), *reversed(pointers))  # ava prints the innermost first
    at = project_frame(frames) or (pointers[0] if pointers else None)
    text = [
        b.strip()
        for b in body
        if b.strip()
        and not (_LOCATION.match(b) or _POINTER.match(b) or _SOURCE.match(b))
        and not b.lstrip().startswith("at ")
    ]
    thrown = _inspected(text)
    text = [t for t in text if not _INSPECT.match(t)]
    error_type, message = next(
        ((t, m) for line in text if (t := split_error(line)[0]) for m in [split_error(line)[1]]),
        thrown,
    )
    if not text or not text[0].startswith("Error thrown in test"):
        message = text[0] if text else ""
    return Failure(
        kind=Kind.TEST,
        id=title,
        file=at.file if at else (relative(where["file"], root) if where else ""),
        line=at.line if at else (to_int(where["line"]) if where else None),
        error_type=error_type,
        message=message.rstrip(":").strip(),
        frames=frames,
        detail=capped(text if thrown[0] else text[1:]),  # "Error thrown in test:" kept
    )


def _inspected(text: list[str]) -> tuple[str, str]:
    """The type and message of the error ava printed with util.inspect (ava 3), else empty."""
    for n, line in enumerate(text[:-1]):
        head = _INSPECTED.match(line)
        said = _INSPECTED_MESSAGE.match(text[n + 1]) if head else None
        if head and said:
            return head["type"], said["msg"]
    return "", ""


def _counts(lines: list[str]) -> Counts:
    seen: dict[str, int] = {}
    for line in lines:
        m = _TOTAL.match(line) if line.startswith("  ") and line[2:3].isdigit() else None
        if m:
            what = (m["what"] or m["what2"]).split()[0]
            seen[what] = seen.get(what, 0) + int(m["n"] or m["n2"])
    if not seen:
        return Counts()
    passed = seen.get("passed", sum(1 for line in lines if _PASS.match(line)))
    return Counts(  # ava names the passing count only when nothing failed: count the ✔ lines
        passed=passed,
        failed=seen.get("failed", 0),
        errors=seen.get("uncaught", 0) + seen.get("unhandled", 0),
        skipped=seen.get("skipped", 0) + seen.get("todo", 0),
        summary_seen=True,
    )

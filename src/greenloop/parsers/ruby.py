"""RSpec and minitest."""

from __future__ import annotations

import re
from dataclasses import replace

from greenloop.parsers.generic import MAX_FAILURES, capped, lines_of, relative, to_int
from greenloop.parsers.model import Counts, Failure, Frame, Kind, ParseResult, ParserInput

_RSPEC_ITEM = re.compile(r"^\s+(?P<n>\d+)\) (?P<desc>\S.*)$")
_RSPEC_RERUN = re.compile(r"^rspec (?P<loc>\S+:\d+(?:\[[\d:]+\])?) # (?P<desc>.*)$")
_RSPEC_SUMMARY = re.compile(
    r"^(?P<ex>\d+) examples?, (?P<fail>\d+) failures?(?:, (?P<pending>\d+) pending)?"
    r"(?:, (?P<outside>\d+) errors? occurred outside of examples)?"
)
_RUBY_FRAME = re.compile(
    r"^\s*(?:# )?(?P<file>[^\s:#][^:]*\.rb):(?P<line>\d+)(?::in [`'](?P<fn>[^`']*)['`])?"
)
_EXC = re.compile(r"^\s*(?P<type>[A-Z]\w*(?:::\w+)*):$")
_MT_HEAD = re.compile(r"^\s+\d+\) (?P<kind>Failure|Error):$")
_MT_ID = re.compile(r"^(?P<id>[\w:]+#\S+?)(?: \[(?P<loc>[^\]]+)\])?:$")
_MT_SUMMARY = re.compile(
    r"^(?P<runs>\d+) (?:runs|tests), (?P<asserts>\d+) assertions, (?P<fail>\d+) failures, "
    r"(?P<err>\d+) errors, (?P<skip>\d+) skips"
)
_MT_EXC = re.compile(r"^(?P<type>[A-Z]\w*(?:::\w+)*): (?P<msg>.*)$")
EXPECTATION = "RSpec::Expectations::ExpectationNotMetError"


def parse(inp: ParserInput) -> ParseResult:
    lines = lines_of(inp)
    text = "\n".join(lines)
    failures: list[Failure] = []
    counts = Counts()
    if "Failures:" in text or " examples, " in text or " example, " in text:
        failures, counts = _rspec(lines, inp.root)
    if ") Failure:" in text or ") Error:" in text or " assertions, " in text:
        found, mt_counts = _minitest(lines, inp.root)
        failures += found
        counts = mt_counts if mt_counts.summary_seen else counts
    return ParseResult(tool="ruby", failures=tuple(failures[:MAX_FAILURES]), counts=counts)


def _rspec(lines: list[str], root: str) -> tuple[list[Failure], Counts]:
    reruns = [m for line in lines if line.startswith("rspec ") and (m := _RSPEC_RERUN.match(line))]
    start = next((i for i, line in enumerate(lines) if line.strip() == "Failures:"), len(lines))
    blocks: list[tuple[str, list[str]]] = []
    for line in lines[start + 1 :]:
        if line.startswith(("Finished in ", "Failed examples:")) or _RSPEC_SUMMARY.match(line):
            break
        item = _RSPEC_ITEM.match(line)
        if item and len(line) - len(line.lstrip()) <= 2:
            blocks.append((item["desc"], []))
        elif blocks and len(blocks[-1][1]) < 200:
            blocks[-1][1].append(line)
    failures = [_rspec_failure(desc, body, root) for desc, body in blocks[:MAX_FAILURES]]
    by_desc = {m["desc"].strip(): m["loc"] for m in reruns}
    failures = [_with_id(f, by_desc) for f in failures]
    known = {f.id for f in failures}
    failures += [
        Failure(kind=Kind.TEST, id=m["loc"], detail=(m["desc"],))
        for m in reruns
        if m["loc"] not in known
    ]
    return failures, _rspec_counts(lines)


def _with_id(failure: Failure, by_desc: dict[str, str]) -> Failure:
    loc = by_desc.get(failure.id)
    if loc is None:
        return failure
    return replace(failure, id=loc, detail=(*failure.detail[:14], f"example: {failure.id}"))


def _rspec_failure(desc: str, body: list[str], root: str) -> Failure:
    frames = _ruby_frames([b for b in body if b.lstrip().startswith("# ")], root)
    text = [b.strip() for b in body if b.strip() and not b.lstrip().startswith("# ")]
    text = [t for t in text if not t.startswith("Failure/Error:")] or text
    error_type, message_at = EXPECTATION, 0
    for k, t in enumerate(text[:3]):
        e = _EXC.match(t)
        if e:
            error_type, message_at = e["type"], k + 1
            break
    message = text[message_at] if message_at < len(text) else ""
    where = _project(frames)
    return Failure(
        kind=Kind.TEST,
        id=desc.strip(),
        file=where.file if where else "",
        line=where.line if where else None,
        error_type=error_type,
        message=message,
        frames=frames,
        detail=capped(text[message_at + 1 :]),
    )


def _ruby_frames(lines: list[str], root: str) -> tuple[Frame, ...]:
    frames = []
    for line in lines[:40]:
        m = _RUBY_FRAME.match(line)
        if m:
            frames.append(
                Frame(
                    file=relative(m["file"], root), line=to_int(m["line"]), function=m["fn"] or ""
                )
            )
    return tuple(reversed(frames))  # Ruby prints the innermost call first


def _project(frames: tuple[Frame, ...]) -> Frame | None:
    return next(
        (f for f in reversed(frames) if not f.file.startswith("/")), frames[-1] if frames else None
    )


def _rspec_counts(lines: list[str]) -> Counts:
    m = next((m for line in lines if (m := _RSPEC_SUMMARY.match(line))), None)
    if m is None:
        return Counts()
    examples, failed = int(m["ex"]), int(m["fail"])
    pending = int(m["pending"] or 0)
    return Counts(
        collected=examples,
        passed=examples - failed - pending,
        failed=failed,
        skipped=pending,
        errors=int(m["outside"] or 0),
        summary_seen=True,
    )


def _minitest(lines: list[str], root: str) -> tuple[list[Failure], Counts]:
    failures: list[Failure] = []
    counts = Counts()
    i = 0
    while i < len(lines):
        line = lines[i]
        s = _MT_SUMMARY.match(line) if " assertions, " in line else None
        if s:
            counts = _mt_counts(s)
        head = _MT_HEAD.match(line) if ") " in line else None
        if head and i + 1 < len(lines) and len(failures) < MAX_FAILURES:
            end = i + 2
            while end < len(lines) and lines[end].strip() and end - i < 200:
                end += 1
            failures.append(_mt_failure(head["kind"], lines[i + 1], lines[i + 2 : end], root))
            i = end
            continue
        i += 1
    return failures, counts


def _mt_failure(kind: str, id_line: str, body: list[str], root: str) -> Failure:
    m = _MT_ID.match(id_line.strip())
    id_ = m["id"] if m else id_line.strip().rstrip(":")
    frames = _ruby_frames([b for b in body if _RUBY_FRAME.match(b)], root)
    if m and m["loc"]:
        frames = frames or _ruby_frames([m["loc"]], root)
    text = [b for b in body if not _RUBY_FRAME.match(b)]
    error_type, message = "Minitest::Assertion", text[0].strip() if text else ""
    if kind == "Error" and text and (e := _MT_EXC.match(text[0].strip())):
        error_type, message = e["type"], e["msg"]
    where = _project(frames)
    return Failure(
        kind=Kind.TEST,
        id=id_,
        file=where.file if where else "",
        line=where.line if where else None,
        error_type=error_type,
        message=message,
        frames=frames,
        detail=capped(text[1:]),
    )


def _mt_counts(s: re.Match[str]) -> Counts:
    runs, failed, errors, skips = int(s["runs"]), int(s["fail"]), int(s["err"]), int(s["skip"])
    return Counts(
        collected=runs,
        passed=runs - failed - errors - skips,
        failed=failed,
        errors=errors,
        skipped=skips,
        summary_seen=True,
    )

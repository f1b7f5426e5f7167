"""cargo test / cargo build / check / clippy and rustc: panics, test counts, diagnostics, crashes."""

from __future__ import annotations

import re
from dataclasses import replace

from greenloop.parsers.generic import MAX_FAILURES, capped, lines_of, relative, to_int
from greenloop.parsers.model import Counts, Failure, Frame, Kind, ParseResult, ParserInput

_SECTION = re.compile(r"^---- (?P<name>\S.*?) stdout ----$")
# new: "thread 'x' (123) panicked at src/lib.rs:10:5:"; old: "thread 'x' panicked at 'msg', f:1:2"
_PANIC = re.compile(
    r"^thread '(?P<thread>[^']*)'(?: \(\d+\))? panicked at "
    r"(?:(?P<file>[^\s:']+):(?P<line>\d+):(?P<col>\d+):$|'(?P<msg>.*)', (?P<f2>\S+?):(?P<l2>\d+):\d+)"
)
_NO_PANIC = re.compile(
    r"^note: test did not panic as expected(?: at (?P<file>\S+?):(?P<line>\d+):\d+)?"
)
_FRAME_FN = re.compile(r"^\s*\d+: (?P<fn>\S.*)$")
_FRAME_AT = re.compile(r"^\s+at (?P<file>\S+?):(?P<line>\d+)(?::\d+)?$")
_TEST_LINE = re.compile(
    r"^test (?P<name>\S+)(?: - should panic)? \.\.\. FAILED$|^(?P<q>\S+) --- FAILED$"
)
_RESULT = re.compile(
    r"^test result: (?:ok|FAILED)\. (?P<passed>\d+) passed; (?P<failed>\d+) failed; "
    r"(?P<ignored>\d+) ignored"
)
_RUNNING = re.compile(r"^running \d+ tests?$")
_BINARY = re.compile(r"^\s*(?:Running|Doc-tests) (?P<desc>.+?)(?: \((?P<path>[^)]+)\))?$")
_KILLED = re.compile(
    r"process didn't exit successfully: `(?P<path>[^`]*)` \((?P<what>signal: \d+, (?P<sig>SIG\w+)[^)]*)\)"
)
_DIAG = re.compile(r"^(?P<sev>error|warning)(?:\[(?P<code>[A-Z]\d{4})\])?: (?P<msg>\S.*)$")
_ARROW = re.compile(r"^\s*--> (?P<file>[^\s:]+):(?P<line>\d+):(?P<col>\d+)$")
_LINT = re.compile(r"#\[(?:warn|deny|allow|forbid)\((?P<lint>[\w:]+)\)\]")
# clippy names the lint in every diagnostic's help URL; the #[deny]/#[allow] notes come once only
_CLIPPY_URL = re.compile(r"rust-clippy/\S*#(?P<lint>\w+)")
_WRAPPER = re.compile(
    r"could not compile|test failed, to rerun|targets? failed|aborting due to|"
    r"generated \d+ warnings?|build failed|previous errors?"
)


def parse(inp: ParserInput) -> ParseResult:
    lines = lines_of(inp)
    tests = _test_failures(lines, inp.root)
    crashes, killed = _crashes(lines)
    diagnostics = _diagnostics(lines, inp.root)
    failures = (tests + crashes + diagnostics)[:MAX_FAILURES]
    counts = _counts(lines, crashed=bool(killed))
    distinct = sum(1 for f in diagnostics if f.severity == "error")
    if not tests and 0 < distinct < counts.failed:
        # `cargo test` compiles the lib and its test harness: each reports the same errors
        counts = replace(counts, failed=distinct)
    return ParseResult(tool="cargo", failures=tuple(failures), counts=counts, killed=tuple(killed))


def _test_failures(lines: list[str], root: str) -> list[Failure]:
    failures: dict[str, Failure] = {}
    i = 0
    while i < len(lines):
        m = _SECTION.match(lines[i]) if lines[i].startswith("---- ") else None
        if m:
            end = _section_end(lines, i + 1)
            failures[m["name"]] = _doc_test(_test_failure(m["name"], lines[i + 1 : end], root))
            i = end
            continue
        t = _TEST_LINE.match(lines[i]) if "FAILED" in lines[i] else None
        if t:
            name = t["name"] or t["q"]
            failures.setdefault(name, Failure(kind=Kind.TEST, id=name))
        i += 1
    return list(failures.values())


# rustdoc names a doc test "src/lib.rs - path::Item (line 336)" and its panics give the line inside
# the example ("panicked at src/lib.rs:21:5"), counted from a wrapper rustdoc may have added
_DOC_TEST = re.compile(r"^(?P<file>\S+\.rs) - (?:.+ )?\(line (?P<line>\d+)\)$")


def _doc_test(found: Failure) -> Failure:
    """A doc test's failure is at its example's line in the source file, not the file's line
    that has the number of the example's own line."""
    doc = _DOC_TEST.match(found.id)
    if doc is None or found.file != doc["file"]:
        return found
    where = (
        f"the example at {doc['file']}:{doc['line']} panicked (rustdoc's line {found.line} of it)"
    )
    return replace(
        found,
        line=to_int(doc["line"]),
        column=None,
        frames=(),
        detail=capped([where, *found.detail]),
    )


def _section_end(lines: list[str], start: int) -> int:
    for j in range(start, len(lines)):
        line = lines[j]
        if line.startswith(("---- ", "test result:", "failures:")) and j > start:
            return j
    return len(lines)


def _test_failure(name: str, block: list[str], root: str) -> Failure:
    caught = _caught_panics(name, block)
    if caught:  # the test thread panicked again after them: its last panic ended the test
        last, ending = caught.pop()
        found = _panic(name, ending, block[last + 1 :], root)
        earlier = [f"caught earlier: {m['file']}:{m['line']}: {_said(block, i)}" for i, m in caught]
        return replace(found, detail=capped([*found.detail, *earlier]))
    for i, line in enumerate(block):
        p = _PANIC.match(line) if "panicked at" in line else None
        if p:
            return _panic(name, p, block[i + 1 :], root)
        n = _NO_PANIC.match(line)
        if n:
            return Failure(
                kind=Kind.TEST,
                id=name,
                file=relative(n["file"] or "", root),
                line=to_int(n["line"]),
                error_type="panic",
                message="test did not panic as expected",
            )
    return Failure(kind=Kind.TEST, id=name, detail=capped([b for b in block if b.strip()]))


def _caught_panics(name: str, block: list[str]) -> list[tuple[int, re.Match[str]]]:
    """The test thread's own panics (file:line form), when there are several: a test panics on
    purpose inside catch_unwind, then fails an assertion. One panic, or panics of threads it
    spawned (the cause, before the test's own unwrap), keep the first as the failure."""
    own = [(i, _PANIC.match(line)) for i, line in enumerate(block) if "panicked at" in line]
    mine = [(i, p) for i, p in own if p is not None and p["thread"] == name and p["file"]]
    return mine if len(mine) > 1 else []


def _said(block: list[str], at: int) -> str:
    return block[at + 1].strip() if at + 1 < len(block) else ""


def _panic(name: str, p: re.Match[str], rest: list[str], root: str) -> Failure:
    trace_at = next((k for k, b in enumerate(rest) if b.startswith("stack backtrace:")), len(rest))
    frames = _backtrace(rest[trace_at + 1 :], root)
    if p["file"]:
        text = [line for line in rest[:trace_at] if not line.startswith("note: ")]
        message, detail = (text[0], text[1:]) if text else ("", [])
        file, line, col = p["file"], p["line"], p["col"]
    else:
        message, detail = p["msg"], []
        file, line, col = p["f2"], p["l2"], None
    return Failure(
        kind=Kind.TEST,
        id=name,
        file=relative(file, root),
        line=to_int(line),
        column=to_int(col),
        error_type="panic",
        message=message.strip(),
        detail=capped(detail),
        frames=frames or (Frame(file=relative(file, root), line=to_int(line)),),
    )


def _backtrace(rest: list[str], root: str) -> tuple[Frame, ...]:
    frames: list[Frame] = []
    function = ""
    for line in rest:
        if line.startswith("note: Some details") or not line.strip():
            break
        f = _FRAME_FN.match(line)
        if f:
            function = f["fn"]
            continue
        a = _FRAME_AT.match(line)
        if a:
            frames.append(
                Frame(file=relative(a["file"], root), line=to_int(a["line"]), function=function)
            )
    return tuple(reversed(frames[:40]))  # innermost first in Rust; outermost first here


def _crashes(lines: list[str]) -> tuple[list[Failure], list[str]]:
    binaries: dict[str, str] = {}
    failures: list[Failure] = []
    killed: list[str] = []
    for line in lines:
        if "Running " in line or "Doc-tests " in line:
            b = _BINARY.match(line)
            if b and b["path"]:
                binaries[b["path"].strip()] = b["desc"]
        k = _KILLED.search(line) if "didn't exit successfully" in line else None
        if k:
            path = k["path"]
            name = next(
                (d for p, d in binaries.items() if path.endswith(p)), path.rsplit("/", 1)[-1]
            )
            killed.append(name)
            failures.append(
                Failure(kind=Kind.CRASH, id=name, error_type=k["sig"], message=k["what"].strip())
            )
    return failures, killed


def _diagnostics(lines: list[str], root: str) -> list[Failure]:
    found: list[Failure] = []
    for i, line in enumerate(lines):
        if not line.startswith(("error", "warning")):
            continue
        d = _DIAG.match(line)
        a = _ARROW.match(lines[i + 1]) if d and i + 1 < len(lines) else None
        if d and a:
            found.append(_diagnostic(d, a, _without_std(_block(lines, i + 2)), root))
    if not found:
        found = _unlocated(lines)
    return _once(found)


def _once(found: list[Failure]) -> list[Failure]:
    """The same error once per macro expansion: listed once, with how many times it was reported."""
    seen: dict[tuple[str, str], int] = {}
    for f in found:
        seen[(f.id, f.message)] = seen.get((f.id, f.message), 0) + 1
    out: list[Failure] = []
    for f in found:
        times = seen.pop((f.id, f.message), 0)
        note = (f"(reported {times} times: once per macro expansion)",) if times > 1 else ()
        if times:
            out.append(replace(f, detail=(*note, *f.detail)) if note else f)
    return out


def _without_std(block: list[str]) -> list[str]:
    """Notes pointing into the toolchain (``--> /rustc/<hash>/library/...``) say nothing to fix."""
    out: list[str] = []
    skipping = False
    for line in block:
        if "/rustc/" in line and ("-->" in line or ":::" in line):
            if out and out[-1].lstrip().startswith(("note:", "= note:")):
                out.pop()
            skipping = True
        elif skipping and line[:1].isalpha():
            skipping = False  # the next top-level note/help line
        if not skipping:
            out.append(line)
    return out


def _block(lines: list[str], start: int) -> list[str]:
    end = start
    while end < len(lines) and lines[end].strip() and end - start < 60:
        end += 1
    return lines[start:end]


def _diagnostic(d: re.Match[str], a: re.Match[str], block: list[str], root: str) -> Failure:
    lint = next((m["lint"] for b in block if (m := _LINT.search(b))), "")
    url = next((m["lint"] for b in block if (m := _CLIPPY_URL.search(b))), "")
    lint = lint or (f"clippy::{url}" if url else "")
    code = d["code"] or lint
    file = relative(a["file"], root)
    return Failure(
        kind=Kind.LINT if code.startswith("clippy::") else Kind.BUILD,
        id=f"{file}:{a['line']}:{a['col']} {code}".strip(),
        file=file,
        line=to_int(a["line"]),
        column=to_int(a["col"]),
        code=code,
        error_type=d["sev"],
        message=d["msg"].strip(),
        detail=capped([b for b in block if b.strip() != "|" and "further information" not in b]),
        severity=d["sev"],
    )


def _unlocated(lines: list[str]) -> list[Failure]:
    """``error: linker `cc` not found`` and the like: errors with no location."""
    out: list[Failure] = []
    for line in lines:
        d = _DIAG.match(line) if line.startswith("error") else None
        if d and not _WRAPPER.search(d["msg"]):
            out.append(
                Failure(kind=Kind.BUILD, id=d["msg"][:120], error_type="error", message=d["msg"])
            )
    return out[:20]


_PREVIOUS = re.compile(r"^error: could not compile `[^`]+`.* due to (?P<n>\d+) previous errors?")


def _compile_errors(lines: list[str]) -> Counts:
    """cargo build/check: ``could not compile ... due to N previous errors``, summed per target."""
    totals = [int(m["n"]) for line in lines if (m := _PREVIOUS.match(line))]
    return Counts(failed=sum(totals), summary_seen=True) if totals else Counts()


def _counts(lines: list[str], *, crashed: bool) -> Counts:
    results = [
        m for line in lines if line.startswith("test result:") and (m := _RESULT.match(line))
    ]
    if not results:
        return _compile_errors(lines)
    running = sum(1 for line in lines if line.startswith("running ") and _RUNNING.match(line))
    return Counts(
        passed=sum(int(m["passed"]) for m in results),
        failed=sum(int(m["failed"]) for m in results),
        skipped=sum(int(m["ignored"]) for m in results),
        # a binary that started and never reported its result died mid-way: incomplete
        summary_seen=not crashed and len(results) >= running,
    )

"""mocha: the spec reporter (its default), ``--reporter tap`` and ``--reporter json``."""

from __future__ import annotations

import json
import re
from dataclasses import replace

from greenloop.parsers import node_test, sniff
from greenloop.parsers.generic import MAX_FAILURES, capped, lines_of, relative
from greenloop.parsers.js_tests import js_frames, project_frame, split_error
from greenloop.parsers.model import Counts, Failure, Kind, ParseResult, ParserInput

_TOTAL = re.compile(r"^ +(?P<n>\d+) (?P<what>passing|failing|pending)\b")
_BLOCK = re.compile(r"^  (?P<n>\d+)\) (?P<title>\S.*)$")
_CRASH = re.compile(
    r"^\s*Exception during run: (?P<type>\w+)(?:\[ @(?P<file>[^\]]*?) \])?: (?P<msg>.+)$"
)
_TAP_NOT_OK = re.compile(r"^not ok \d+ (?!- )(?P<title>.+?)(?: # (?:SKIP|TODO)\b.*)?$")
_TYPED = re.compile(r"^(?:[A-Z]\w*)?(?:Error|Exception)(?: \[\w+\])?: ")
_NPM_LINE = re.compile(r"^(?:> \S+@\S* \S|npm (?:error|ERR!) )")
_INSPECT_NOISE = re.compile(r"^(?:generatedMessage|code|operator): |^[{}]$")


def parse(inp: ParserInput) -> ParseResult:
    lines = lines_of(inp)
    report = _json_report(lines)
    if report is not None:
        return _from_json(report, inp.root)
    crashes = _crashes(lines, inp.root)
    found = sorted(
        [(i, f) for i, section in _failing_sections(lines) for f in _blocks(section, inp.root)]
        + crashes,
        key=lambda pair: pair[0],
    )
    if not found and not _counts(lines).summary_seen:
        found = _tap(lines, inp.root)  # `--reporter tap`: `not ok 13 <title>`, the error indented
    if not found and not _counts(lines).summary_seen:  # node died loading a test file (CJS)
        found = [(0, f) for f in _uncaught(lines, inp.root)]
        crashes = found
    counts = replace(_counts(lines), errors=len(crashes))
    failures = tuple(f for _, f in found[:MAX_FAILURES])
    return ParseResult(tool="mocha", failures=failures, counts=counts)


def _tap(lines: list[str], root: str) -> list[tuple[int, Failure]]:
    """mocha's TAP reporter: ``not ok N <full title>`` (no ``-``), then the error message, the
    assertion's diff, ``AssertionError [ERR_ASSERTION]: …`` and its stack, indented 2."""
    found: list[tuple[int, Failure]] = []
    for i, line in enumerate(lines):
        m = _TAP_NOT_OK.match(line) if line.startswith("not ok ") else None
        if m is None or len(found) >= MAX_FAILURES:
            continue
        body = []
        for b in lines[i + 1 : i + 300]:
            if not b.startswith("  ") and b.strip():
                break
            body.append(b)
        found.append((i, _tap_failure(m["title"], body, root)))
    return found


def _tap_failure(title: str, body: list[str], root: str) -> Failure:
    frames = js_frames(body, root)
    text = [b.strip() for b in body if b.strip() and not b.lstrip().startswith("at ")]
    typed = next((t for t in text if _TYPED.match(t)), "")
    error_type, said = split_error(typed or (text[0] if text else ""))
    message = said.rstrip(":").strip()
    where = project_frame(frames)
    return Failure(
        kind=Kind.TEST,
        id=title,
        file=where.file if where else "",
        line=where.line if where else None,
        error_type=error_type,
        message=message,
        frames=frames,
        detail=capped([t for t in text if t not in (typed, message, f"{message}:")][:12]),
    )


def _uncaught(lines: list[str], root: str) -> list[Failure]:
    """node's uncaught-exception block: mocha requires the test files itself (`--reporter tap`
    prints nothing before it), so a syntax error or a module not found ends node first; mocha's
    ESM file loader prints a module not found itself (etag-3: no header, ``Require stack:``)."""
    text = "\n".join(lines)
    if "^" in text and sniff.NODE_UNCAUGHT.search(text):
        return node_test.uncaught(lines, root)
    if "Require stack:" in text or "ERR_MODULE_NOT_FOUND" in text:  # mocha printed it (ESM loader)
        return [replace(f, kind=Kind.CRASH) for f in node_test.load_errors(lines, root)[:1]]
    return []


def _failing_sections(lines: list[str]) -> list[tuple[int, list[str]]]:
    """The lines after each run's ``N failing``, up to npm's next ``> pkg script`` or error line.

    ``npm test --workspaces`` runs mocha once a package: one summary and one list of failures each.
    """
    sections = []
    for i, line in enumerate(lines):
        if line.endswith(" failing") and _TOTAL.match(line):
            end = next((j for j in range(i + 1, len(lines)) if _NPM_LINE.match(lines[j])), None)
            sections.append((i, lines[i + 1 : end]))
    return sections


def _crashes(lines: list[str], root: str) -> list[tuple[int, Failure]]:
    """``Exception during run: SyntaxError[ @…/tests/x.js ]: msg``: a test file failed to load."""
    found = []
    for i, line in enumerate(lines):
        m = _CRASH.match(line) if "Exception during run: " in line else None
        if m is None:
            continue
        stack = [b for b in lines[i + 1 : i + 31] if b.lstrip().startswith("at ")]
        file = relative(m["file"], root) if m["file"] else ""
        failure = Failure(
            kind=Kind.BUILD,
            id=file or "mocha",
            file=file,
            error_type=m["type"],
            message=m["msg"].strip(),
            frames=js_frames(stack, root),
        )
        found.append((i, failure))
    return found


def _counts(lines: list[str]) -> Counts:
    """Summed over the runs: each mocha run (an npm workspace) prints its own summary."""
    seen: dict[str, int] = {}
    for line in lines:
        m = _TOTAL.match(line) if line.startswith("  ") else None
        if m:
            seen[m["what"]] = seen.get(m["what"], 0) + int(m["n"])
    return Counts(
        passed=seen.get("passing", 0),
        failed=seen.get("failing", 0),
        skipped=seen.get("pending", 0),
        summary_seen="passing" in seen or "failing" in seen,
    )


def _blocks(lines: list[str], root: str) -> list[Failure]:
    """``  1) suite`` / ``       test title:`` then the error, its diff and its stack."""
    starts = [i for i, line in enumerate(lines) if _BLOCK.match(line)]
    failures: list[Failure] = []
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        failures.append(_block(lines[start:end], root))
    return failures


def _block(block: list[str], root: str) -> Failure:
    head = _BLOCK.match(block[0])
    title = [head["title"].strip() if head else block[0].strip()]
    i = 1
    while not title[-1].endswith(":") and i < len(block) and block[i].strip():
        title.append(block[i].strip())
        i += 1
    body = [b for b in block[i:] if b.strip()]
    text = [b.strip() for b in body if not b.lstrip().startswith("at ")]
    error_type, message = split_error(text[0]) if text else ("", "")
    frames = js_frames(body, root)
    where = project_frame(frames)
    return Failure(
        kind=Kind.TEST,
        id=" ".join(title).removesuffix(":"),
        file=where.file if where else "",
        line=where.line if where else None,
        error_type=error_type,
        message=message.rstrip(":").strip(),
        frames=frames,
        detail=capped([t for t in text[1:] if not _INSPECT_NOISE.match(t)]),
    )


# ---- --reporter json ---------------------------------------------------------------------------
def _json_report(lines: list[str]) -> dict[str, object] | None:
    start = next((i for i, line in enumerate(lines) if line == "{"), None)
    if start is None:
        return None
    end = max((i for i, line in enumerate(lines) if line == "}"), default=-1)
    try:
        report = json.loads("\n".join(lines[start : end + 1]))
    except ValueError:
        return None
    return report if isinstance(report, dict) and "stats" in report else None


def _from_json(report: dict[str, object], root: str) -> ParseResult:
    stats = report.get("stats") if isinstance(report.get("stats"), dict) else {}
    assert isinstance(stats, dict)
    raw = report.get("failures")
    failures = (
        [_json_failure(t, root) for t in raw if isinstance(t, dict)]
        if isinstance(raw, list)
        else []
    )
    counts = Counts(
        passed=int(stats.get("passes", 0)),
        failed=int(stats.get("failures", 0)),
        skipped=int(stats.get("pending", 0)),
        summary_seen=True,
    )
    return ParseResult(tool="mocha", failures=tuple(failures[:MAX_FAILURES]), counts=counts)


def _json_failure(test: dict[str, object], root: str) -> Failure:
    err = test.get("err") if isinstance(test.get("err"), dict) else {}
    assert isinstance(err, dict)
    stack = str(err.get("stack", "")).split("\n")
    frames = js_frames(stack, root)
    where = project_frame(frames)
    message = str(err.get("message", "")).strip().split("\n")
    detail = [m for m in message[1:] if m.strip()]
    detail += [f"{key}: {err[key]}" for key in ("expected", "actual") if key in err]
    return Failure(
        kind=Kind.TEST,
        id=str(test.get("fullTitle") or test.get("title") or relative(str(test.get("file")), root)),
        file=where.file if where else "",
        line=where.line if where else None,
        error_type=str(err.get("name", "")) or split_error(stack[0])[0],
        message=message[0].rstrip(":").strip(),
        frames=frames,
        detail=capped(detail),
    )

"""Fallback: ``file:line[:col]: message`` diagnostics from any tool, and plain 'N passed, N failed'.

Also the small text helpers every text parser shares (ANSI stripping, capped lines, paths).
"""

from __future__ import annotations

import re

from greenloop.parsers.model import (
    Counts,
    Failure,
    Kind,
    ParseResult,
    ParserInput,
    in_dependencies,
)
from greenloop.parsers.values_cut import cut_pairs

_DIAG = re.compile(
    r"^(?P<file>[^\s:][^:\n]*?\.[A-Za-z0-9]{1,6}):(?P<line>\d+)(?::(?P<col>\d+))?:?\s+"
    r"(?:(?P<sev>fatal error|error|warning|note)\s*:?\s*)?(?P<msg>\S.*)$",
    re.MULTILINE,
)
_PLAIN_SUMMARY = re.compile(
    r"^(?:\w+:\s*)?(?P<passed>\d+) passed, (?P<failed>\d+) failed(?:, (?P<skipped>\d+) skipped)?\s*$",
    re.MULTILINE,
)
# seed 003: a runner's "[KILLED] suite" line is unresolved coverage, never a pass
_KILLED = re.compile(r"^[ \t]*\[KILLED\][ \t]*(?P<name>\S[^\n]{0,200})", re.MULTILINE)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]{0,500}(?:\x07|\x1b\\)")
MAX_FAILURES = 500
MAX_LINE = 4000
"""Lines are cut to this length before matching: a 10 MB line must not cost seconds."""
MAX_DETAIL = 15


def parse(inp: ParserInput) -> ParseResult:
    text = text_of(inp)
    failures: list[Failure] = []
    for line in text.split("\n"):
        m = _DIAG.match(line[:MAX_LINE]) if ":" in line else None
        if m is None:
            continue
        if len(failures) >= MAX_FAILURES:
            break
        sev = (m["sev"] or "").replace("fatal ", "")
        if sev == "note":
            continue
        failures.append(
            Failure(
                kind=Kind.BUILD,
                id=f"{m['file']}:{m['line']}",
                file=m["file"],
                line=int(m["line"]),
                column=int(m["col"]) if m["col"] else None,
                message=m["msg"].strip()[:500],
                error_type=sev,
                severity="warning" if sev == "warning" else "error",
            )
        )
    killed = tuple(m["name"].strip() for m in _KILLED.finditer(text)) if "[KILLED]" in text else ()
    return ParseResult(
        tool="generic", failures=tuple(failures), counts=_plain_counts(text), killed=killed
    )


def _plain_counts(text: str) -> Counts:
    found = list(_PLAIN_SUMMARY.finditer(text)) if " passed, " in text else []
    if not found:
        return Counts()
    m = found[-1]
    return Counts(
        passed=int(m["passed"]),
        failed=int(m["failed"]),
        skipped=int(m["skipped"] or 0),
        summary_seen=True,
    )


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text) if "\x1b" in text else text


def text_of(inp: ParserInput) -> str:
    """The run's output as one text: the ordered merged view when there is one."""
    text = inp.merged or (inp.stdout + "\n" + inp.stderr)
    return rstrip_lines(strip_ansi(text.replace("\r\n", "\n")))


def rstrip_lines(text: str) -> str:
    """Lines without their trailing blanks: a runner that pads to 545 columns prints mostly spaces."""
    if " \n" not in text and "\t\n" not in text and not text.endswith((" ", "\t")):
        return text
    return "\n".join(line.rstrip(" \t") for line in text.split("\n"))  # linear, unlike [ \t]+$


def lines_of(inp: ParserInput) -> list[str]:
    """Output lines, each capped at ``MAX_LINE`` characters."""
    return [line[:MAX_LINE] for line in text_of(inp).split("\n")]


def own_first(failures: list[Failure]) -> list[Failure]:
    """The repository's own findings before those inside installed dependencies (a type checker
    that reads node_modules/@types lists theirs by the thousand), each group in its order."""
    return sorted(failures, key=lambda f: in_dependencies(f.file))


def relative(path: str, root: str) -> str:
    """``path`` relative to the repository root when it lies inside it; ``./`` dropped."""
    path = path.strip()
    if path.startswith("file:///"):  # ES module stack frames are URLs
        path = path[len("file://") :]
    if root:
        base = root.rstrip("/") + "/"
        if path.startswith(base):
            path = path[len(base) :]
    while path.startswith("./"):
        path = path[2:]
    return path


def to_int(text: str | None) -> int | None:
    return int(text) if text and text.isdigit() and len(text) < 10 else None


def capped(lines: list[str], limit: int = MAX_DETAIL) -> tuple[str, ...]:
    """Detail lines without leading/trailing blanks, at most ``limit``; a long expected/actual pair
    kept around its first difference (values_cut), then each line cut at 300 characters."""
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    while lines and not lines[0].strip():
        lines = lines[1:]
    return tuple(line[:300] for line in cut_pairs(lines[:limit]))

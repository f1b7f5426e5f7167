"""Python linters, type checkers and formatters: mypy, ruff (concise/full/json/format), flake8, pyright, black.

Diagnostics become Failures with id ``path:line:col code``; ``Counts.failed`` is the tool's own total
when it prints one (then ``summary_seen``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from greenloop.parsers.model import Counts, Failure, Kind, ParseResult, ParserInput
from greenloop.parsers.pytraceback import relative

MAX_FAILURES = 500
MAX_DETAIL = 8

_MYPY = re.compile(
    r"^(?P<file>[^\s:][^:\n]*):(?P<line>\d+):(?:(?P<col>\d+):)?(?:\d+:\d+:)? "
    r"(?P<sev>error|note|warning): (?P<msg>.*?)(?:  \[(?P<code>[\w-]+)\])?$"
)
_MYPY_FOUND = re.compile(r"^Found (\d+) errors? in \d+ files?", re.MULTILINE)
_MYPY_OK = re.compile(r"^Success: no issues found", re.MULTILINE)
_CONCISE = re.compile(
    r"^(?P<file>[^\s:][^:\n]*):(?P<line>\d+):(?P<col>\d+): "
    r"(?P<code>[A-Z]+\d+|[a-z][\w-]*(?=:)|SyntaxError(?=:))?:? ?(?:\[\*\] )?(?P<msg>.*)$",
    re.MULTILINE,
)
_FULL_HEAD = re.compile(r"^(?P<code>[A-Z]+\d+|[a-z][\w-]*):?(?: \[\*\])? (?P<msg>\S.*)$")
_ARROW = re.compile(r"^\s*--> (?P<file>[^\n]+?):(?P<line>\d+):(?P<col>\d+)\s*$")
_RUFF_FOUND = re.compile(r"^Found (\d+) errors?\.", re.MULTILINE)
_RUFF_OK = re.compile(r"^All checks passed!", re.MULTILINE)
# Linear: `file` ends on its last non-space, trailing blanks are matched once.
_WOULD_REFORMAT = re.compile(
    r"^(?:Would reformat|would reformat):? (?P<file>\S(?:[^\n]*\S)?)[^\S\n]*$", re.M
)
_DIFF_FILE = re.compile(r"^--- (?P<file>[^\t\n]+?)(?:\t[^\n]*)?\n\+\+\+ ", re.MULTILINE)
_FORMAT_TOTAL = re.compile(r"^(\d+) files? would be reformatted", re.MULTILINE)
_FORMAT_TOTAL_LINE = re.compile(r"^\d+ files? would be reformatted[^\n]*$", re.MULTILINE)
_STATISTICS = re.compile(
    r"^[ \t]*(?P<n>\d+)[ \t]+(?P<code>[A-Z]+\d+)[ \t]+(?:\[[* ]\][ \t]+)?(?P<name>[\w-]+)[ \t]*$",
    re.M,
)
# Linear: the indent and the file split at the first non-space, never at every position.
_PYRIGHT = re.compile(
    r"^\s+(?P<file>\S[^\n]*?):(?P<line>\d+):(?P<col>\d+) - (?P<sev>error|warning|information): (?P<msg>.*)$"
)
_PYRIGHT_RULE = re.compile(r"\((?P<rule>report\w+)\)\s*$")  # no leading \s*: linear
_PYRIGHT_TOTAL = re.compile(r"^(\d+) errors?, (\d+) warnings?, \d+ informations?", re.MULTILINE)
_BLACK_ERROR = re.compile(r"^error: cannot format (?P<file>[^:\n]+): (?P<msg>[^\n]*)$", re.M)
_BLACK_PARSE = re.compile(
    r"^error: cannot parse: (?P<file>[^\n]+?):(?P<line>\d+):(?P<col>\d+)(?P<rest>(?:\n(?:    |\w+Error: )[^\n]*)*)",
    re.M,
)


def _diag(
    kind: Kind, file: str, line: int | None, col: int | None, code: str, message: str, **extra: Any
) -> Failure:
    where = f"{file}:{line}" + (f":{col}" if col else "") if line else file
    return Failure(
        kind=kind,
        id=f"{where} {code}".strip(),
        file=file,
        line=line,
        column=col,
        code=code,
        message=message.strip()[:500],
        **extra,
    )


def _text(inp: ParserInput) -> str:
    return inp.stdout + "\n" + inp.stderr if inp.stderr else inp.stdout


def _total(pattern: re.Pattern[str], ok: re.Pattern[str] | None, text: str) -> Counts:
    found = list(pattern.finditer(text))
    if found:
        return Counts(failed=int(found[-1].group(1)), summary_seen=True)
    if ok is not None and ok.search(text):
        return Counts(summary_seen=True)
    return Counts()


def parse_mypy(inp: ParserInput) -> ParseResult:
    failures: list[Failure] = []
    for raw in _text(inp).split("\n"):
        m = _MYPY.match(raw)
        if m is None:
            if failures and raw.startswith("    ") and raw.strip():  # --pretty source context
                failures[-1] = _with_detail(failures[-1], raw.rstrip())
            continue
        if m["sev"] == "note":
            if failures and failures[-1].file == m["file"]:
                failures[-1] = _with_detail(failures[-1], m["msg"])
            continue
        if len(failures) >= MAX_FAILURES:
            break
        code = m["code"] or ""
        kind = Kind.BUILD if code == "syntax" else Kind.TYPE
        line, col = int(m["line"]), int(m["col"]) if m["col"] else None
        failures.append(
            _diag(
                kind,
                m["file"],
                line,
                col,
                code,
                m["msg"],
                error_type=m["sev"],
                severity=_sev(m["sev"]),
            )
        )
    counts = _total(_MYPY_FOUND, _MYPY_OK, _text(inp))
    return ParseResult(tool="mypy", failures=tuple(failures), counts=counts)


def _with_detail(f: Failure, line: str) -> Failure:
    if len(f.detail) >= MAX_DETAIL:
        return f
    return Failure(
        kind=f.kind,
        id=f.id,
        file=f.file,
        line=f.line,
        column=f.column,
        code=f.code,
        error_type=f.error_type,
        message=f.message,
        frames=f.frames,
        detail=(*f.detail, line),
        severity=f.severity,
    )


def _sev(word: str) -> str:
    return "error" if word in ("error", "") else "warning"


def parse_ruff(inp: ParserInput) -> ParseResult:
    text = _text(inp)
    stripped = inp.stdout.lstrip()
    total: Counts | None = None
    if stripped.startswith("["):
        failures, total = _ruff_json(stripped, inp.root)
    else:
        failures = _concise(text, inp.root) or _ruff_full(text, inp.root)
        failures += _formatting(text, inp.root, failures)
        failures += _statistics(text) if not failures else []
    failures = _with_total(failures, text)
    counts = _total(_RUFF_FOUND, _RUFF_OK, text)
    fmt = _FORMAT_TOTAL.search(text)
    if fmt and not counts.summary_seen:
        counts = Counts(failed=int(fmt.group(1)), summary_seen=True)
    counts = total if total is not None and not counts.summary_seen else counts
    return ParseResult(tool="ruff", failures=tuple(failures[:MAX_FAILURES]), counts=counts)


def _lint_kind(code: str, message: str) -> Kind:
    syntax = code in ("invalid-syntax", "SyntaxError", "E999") or message.startswith("SyntaxError")
    return Kind.BUILD if syntax else Kind.LINT


def _concise(text: str, root: str) -> list[Failure]:
    failures: list[Failure] = []
    for m in _CONCISE.finditer(text):
        if len(failures) >= MAX_FAILURES:
            break
        code = m["code"] or ""
        file = relative(m["file"], root)
        failures.append(
            _diag(_lint_kind(code, m["msg"]), file, int(m["line"]), int(m["col"]), code, m["msg"])
        )
    return failures


def _ruff_full(text: str, root: str) -> list[Failure]:
    """``CODE message`` then `` --> path:line:col`` and a code frame."""
    failures: list[Failure] = []
    lines = text.split("\n")
    for i, line in enumerate(lines[1:], start=1):
        arrow = _ARROW.match(line)
        head = _FULL_HEAD.match(lines[i - 1]) if arrow else None
        if arrow is None or head is None or len(failures) >= MAX_FAILURES:
            continue
        code, msg = head["code"], head["msg"]
        file = relative(arrow["file"], root)
        if code == "unformatted":
            failures.append(_diag(Kind.FORMAT, file, None, None, "", msg, error_type=code))
            continue
        failures.append(
            _diag(_lint_kind(code, msg), file, int(arrow["line"]), int(arrow["col"]), code, msg)
        )
    return failures


def _formatting(text: str, root: str, known: list[Failure]) -> list[Failure]:
    """``ruff format --check`` / ``--diff`` and black: one FORMAT failure per file."""
    seen = {f.file for f in known if f.kind is Kind.FORMAT}
    files = [(m["file"], "would reformat") for m in _WOULD_REFORMAT.finditer(text)]
    files += [(m["file"], "would be reformatted") for m in _DIFF_FILE.finditer(text)]
    failures: list[Failure] = []
    for raw, words in files:
        file = relative(raw.strip(), root)
        if file in seen or file == "/dev/null":
            continue
        seen.add(file)
        msg = f"{file} {words}"
        failures.append(_diag(Kind.FORMAT, file, None, None, "", msg, error_type=words))
    return failures[:MAX_FAILURES]


def _with_total(failures: list[Failure], text: str) -> list[Failure]:
    """Format failures carry the formatter's own total ("2 files would be reformatted, ...")."""
    total = _FORMAT_TOTAL_LINE.search(text)
    if total is None:
        return failures
    line = total.group(0).strip()
    return [_with_detail(f, line) if f.kind is Kind.FORMAT else f for f in failures]


def _statistics(text: str) -> list[Failure]:
    return [
        _diag(Kind.LINT, "", None, None, m["code"], f"{m['n']} x {m['name']}")
        for m in _STATISTICS.finditer(text)
    ][:MAX_FAILURES]


def _ruff_json(text: str, root: str) -> tuple[list[Failure], Counts | None]:
    """The diagnostics, and their number (JSON has no ``Found N errors`` line to count them)."""
    try:
        data = json.loads(text)
    except ValueError:
        return _concise(text, root), None
    failures: list[Failure] = []
    for item in data if isinstance(data, list) else []:
        if not isinstance(item, dict) or len(failures) >= MAX_FAILURES:
            continue
        loc: dict[str, Any] = item["location"] if isinstance(item.get("location"), dict) else {}
        code, msg = str(item.get("code") or ""), str(item.get("message") or "")
        file = relative(str(item.get("filename") or ""), root)
        line, col = loc.get("row"), loc.get("column")
        line = line if isinstance(line, int) else None
        col = col if isinstance(col, int) else None
        kind = _lint_kind(code or "invalid-syntax", msg)
        failures.append(_diag(kind, file, line, col, code, msg))
    total = len(data) if isinstance(data, list) else 0
    return failures, Counts(failed=total, summary_seen=True)


def parse_flake8(inp: ParserInput) -> ParseResult:
    failures = _concise(_text(inp), inp.root)
    return ParseResult(tool="flake8", failures=tuple(failures))


def parse_pyright(inp: ParserInput) -> ParseResult:
    stripped = inp.stdout.lstrip()
    if stripped.startswith("{"):
        return _pyright_json(stripped, inp.root)
    failures: list[Failure] = []
    current: list[str] = []
    start: re.Match[str] | None = None
    for raw in [*_text(inp).split("\n"), ""]:
        m = _PYRIGHT.match(raw)
        if start is not None and (m is not None or not raw[:1].isspace()):
            failures.append(_pyright_failure(start, current, inp.root))
            start, current = None, []
        if m is not None:
            start, current = m, [m["msg"]]
        elif start is not None:
            current.append(raw.strip())
        if len(failures) >= MAX_FAILURES:
            break
    total = _PYRIGHT_TOTAL.search(_text(inp))
    counts = (
        Counts(failed=int(total.group(1)), warnings=int(total.group(2)), summary_seen=True)
        if total
        else Counts()
    )
    return ParseResult(tool="pyright", failures=tuple(failures), counts=counts)


def _pyright_failure(m: re.Match[str], lines: list[str], root: str) -> Failure:
    rule = _PYRIGHT_RULE.search(lines[-1])
    if rule is not None:
        lines = [*lines[:-1], lines[-1][: rule.start()].rstrip()]
    file = relative(m["file"].strip(), root)
    return _diag(
        Kind.TYPE,
        file,
        int(m["line"]),
        int(m["col"]),
        rule["rule"] if rule else "",
        lines[0],
        error_type=m["sev"],
        detail=tuple(line for line in lines[1:MAX_DETAIL] if line),
        severity=_sev(m["sev"]),
    )


def _pyright_json(text: str, root: str) -> ParseResult:
    try:
        data = json.loads(text)
    except ValueError:
        return ParseResult(tool="pyright")
    failures: list[Failure] = []
    diagnostics = data.get("generalDiagnostics") if isinstance(data, dict) else None
    for item in diagnostics if isinstance(diagnostics, list) else []:
        if not isinstance(item, dict) or len(failures) >= MAX_FAILURES:
            continue
        start = (item.get("range") or {}).get("start") or {}
        line, col = start.get("line"), start.get("character")
        lines = str(item.get("message") or "").split("\n")
        sev = str(item.get("severity") or "error")
        failures.append(
            _diag(
                Kind.TYPE,
                relative(str(item.get("file") or ""), root),
                line + 1 if isinstance(line, int) else None,
                col + 1 if isinstance(col, int) else None,
                str(item.get("rule") or ""),
                lines[0],
                error_type=sev,
                detail=tuple(x.strip() for x in lines[1:MAX_DETAIL] if x.strip()),
                severity=_sev(sev),
            )
        )
    summary = data.get("summary") if isinstance(data, dict) else None
    counts = Counts()
    if isinstance(summary, dict) and isinstance(summary.get("errorCount"), int):
        counts = Counts(failed=summary["errorCount"], summary_seen=True)
    return ParseResult(tool="pyright", failures=tuple(failures), counts=counts)


def parse_black(inp: ParserInput) -> ParseResult:
    text = _text(inp)
    failures = [
        _diag(
            Kind.BUILD,
            relative(m["file"], inp.root),
            int(m["line"]),
            int(m["col"]),
            "",
            f"cannot parse {relative(m['file'], inp.root)}:{m['line']}:{m['col']}",
            error_type="cannot parse",
            detail=tuple(x.rstrip() for x in m["rest"].split("\n") if x.strip())[:MAX_DETAIL],
        )
        for m in _BLACK_PARSE.finditer(text)
    ]
    failures += [
        _diag(
            Kind.BUILD,
            relative(m["file"], inp.root),
            None,
            None,
            "",
            m["msg"],
            error_type="cannot format",
        )
        for m in _BLACK_ERROR.finditer(text)
    ]
    failures += [
        f
        for f in _formatting(text, inp.root, [])
        if not inp.stdout or f.file in _would(text, inp.root)
    ]
    failures = _with_total(failures, text)
    total = _FORMAT_TOTAL.search(text)
    counts = Counts(failed=int(total.group(1)), summary_seen=True) if total else Counts()
    if "All done!" in text and not total:
        counts = Counts(summary_seen=True)
    return ParseResult(tool="black", failures=tuple(failures[:MAX_FAILURES]), counts=counts)


def _would(text: str, root: str) -> set[str]:
    return {relative(m["file"].strip(), root) for m in _WOULD_REFORMAT.finditer(text)}

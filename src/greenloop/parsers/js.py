"""JavaScript / TypeScript: tsc, eslint, prettier --check, and the test runners (js_tests, node_test)."""

from __future__ import annotations

import json
import re
from dataclasses import replace

from greenloop.parsers import js_tests, node_test, sniff
from greenloop.parsers.generic import (
    MAX_FAILURES,
    capped,
    lines_of,
    own_first,
    relative,
    to_int,
)
from greenloop.parsers.model import Counts, Failure, Frame, Kind, ParseResult, ParserInput

_TSC_PLAIN = re.compile(
    r"^(?P<file>[^\s(][^(]*)\((?P<line>\d+),(?P<col>\d+)\): (?P<sev>error|warning) (?P<code>TS\d+): (?P<msg>.*)$"
)
_TSC_PRETTY = re.compile(
    r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?P<col>\d+) - (?P<sev>error|warning) (?P<code>TS\d+): (?P<msg>.*)$"
)
_TSC_FOUND = re.compile(r"^Found (?P<n>\d+) errors?\b")
_ESLINT_ROW = re.compile(
    r"^\s+(?P<line>\d+):(?P<col>\d+)\s+(?P<sev>error|warning)\s+(?P<rest>\S.*)$"
)
_ESLINT_SUMMARY = re.compile(
    r"^✖ \d+ problems? \((?P<errors>\d+) errors?, (?P<warnings>\d+) warnings?\)"
)
_RULE = re.compile(r"^@?[\w-]+(?:/[\w-]+)*$")
# eslint-formatter-pretty (xo, tsd): "  index.js:1:1", then "  ✖  1:1  Unexpected var…  no-var"
PRETTY_MARK = "\u2716  "
_PRETTY_FILE = re.compile(r"^  (?P<file>\S[^:]*):\d+:\d+\s*$")
_PRETTY_ROW = re.compile(
    r"^  (?P<sym>[\u2716\u26a0])\s+(?P<line>\d+):(?P<col>\d+)\s+(?P<rest>\S.*?)\s*$"
)
_PRETTY_TOTAL = re.compile(r"^  (?P<n>\d+) (?P<what>error|warning)s?\s*$")
_PRETTIER_WARN = re.compile(r"^\[warn\] (?P<file>\S.*)$")
_PRETTIER_ERROR = re.compile(
    r"^\[error\] (?P<file>[^:\s]+): (?P<type>\w+): (?P<msg>.*?)(?: \((?P<line>\d+):(?P<col>\d+)\))?$"
)

# ESLint's crash banner (exit 2): then node's "path:line" header, the source, "Type: message", stack
ESLINT_CRASH = "Oops! Something went wrong!"
# a rule that threw (xo, eslint): "TypeError: …", "Occurred while linting <file>:<line>", "Rule: …"
RULE_CRASH = "\nOccurred while linting "
_NODE_HEADER = re.compile(r"^(?P<file>/\S+?):(?P<line>\d+)$")
_NODE_ERROR = re.compile(r"^(?P<type>[A-Z]\w*(?:Error|Exception)): (?P<msg>.+)$")
# TAP whose plan comes first (vitest's `tap`/`tap-flat`): counted from its points
_PLAN_FIRST = re.compile(r"^TAP version \d+\n1\.\.\d+$", re.M)
_NODE_AT = re.compile(r"^\s+at (?:(?P<fn>.+?) \()?(?P<file>[^\s()]+?):(?P<line>\d+):\d+\)?$")


def parse(inp: ParserInput) -> ParseResult:
    lines = lines_of(inp)
    text = "\n".join(lines)
    failures: list[Failure] = []
    counts: list[Counts] = []
    killed: list[str] = []
    if " TS" in text:
        found, c = _tsc(lines, inp.root)
        failures += found
        counts.append(c)
    if '"filePath"' in text or "problem" in text:
        found, c = _eslint(lines, inp.root)
        failures += found
        counts.append(c)
    if PRETTY_MARK in text:
        found, c = _pretty(lines, inp.root, _is_tsd(inp.argv, text))
        failures += found
        counts.append(c)
    if "[warn] " in text or "[error] " in text:
        failures += _prettier(lines)
    if ESLINT_CRASH in text:
        failures.append(_eslint_crash(lines, inp.root))
    elif RULE_CRASH in text:
        failures += _rule_crash(lines, inp.root)
    jest = "  ● " in text or "Test Suites:" in text
    if jest or "Tests:" in text:
        found, c, k = js_tests.parse_jest(lines, inp.root)
        failures, killed = failures + found, killed + k
        counts.append(c)
    # not jest's: `jest --color=true` pads its badge into vitest's " FAIL  <test>" shape
    if (" FAIL  " in text or " Tests " in text) and not jest:
        found, c = js_tests.parse_vitest(lines, inp.root)
        failures += found
        counts.append(c)
    failures, killed, c = _node(text, lines, inp.root, failures, killed)
    counts.append(c)
    if _stopped(inp.exit_code) and "TAP version" in text and not c.summary_seen:
        # killed before its summary (a hang past the time limit): the test it was inside
        running = node_test.running_test(lines)
        killed += [running] if running else []
    seen = [c for c in counts if c.summary_seen and not killed]  # killed: incomplete
    # a stray `import { describe } from "node:test"` in a vitest file prints node's "# tests 0" too
    seen = [c for c in seen if c.collected] or seen
    return ParseResult(
        tool="js",
        failures=tuple(own_first(failures)[:MAX_FAILURES]),
        counts=seen[-1] if seen else Counts(),
        killed=tuple(killed),
    )


def _stopped(exit_code: int) -> bool:
    """An exit by a signal (128 + n as the shell says it, or a negative code)."""
    return exit_code < 0 or exit_code > 128


def _node(
    text: str, lines: list[str], root: str, failures: list[Failure], killed: list[str]
) -> tuple[list[Failure], list[str], Counts]:
    if "not ok " in text:
        found, k = node_test.parse_tap(lines, root)
        failures, killed = failures + found, killed + k
    elif "\u2139 tests " in text or "✖ failing tests:" in text:
        found, k = node_test.parse_spec(lines, root)
        failures, killed = failures + found, killed + k
    if "# tests " in text or "\u2139 tests " in text:
        return failures, killed, node_test.node_counts(lines)
    counts = Counts()
    if "TAP version " in text and _PLAN_FIRST.search(text):  # vitest's tap reporters: no `# tests`
        from greenloop.parsers import tap

        counts = tap.leaf_counts(lines)
    if "^" in text and sniff.NODE_UNCAUGHT.search(text):  # node died before its summary (tape)
        failures = failures + node_test.uncaught(lines, root)
    elif not failures and any(m in text for m in sniff.NOT_FOUND):
        failures = node_test.uncaught(lines, root)  # printed by a runner, no node header
    return failures, killed, counts


def _tsc(lines: list[str], root: str) -> tuple[list[Failure], Counts]:
    failures: list[Failure] = []
    errors = None
    for i, line in enumerate(lines):
        if " TS" not in line:
            f = _TSC_FOUND.match(line) if line.startswith("Found ") else None
            errors = int(f["n"]) if f else errors
            continue
        m = _TSC_PLAIN.match(line) or _TSC_PRETTY.match(line)
        if m and len(failures) < MAX_FAILURES:
            failures.append(_tsc_failure(m, _tsc_detail(lines, i + 1), root))
    if errors is None and failures:  # --pretty false (and non-TTY) prints no "Found N errors"
        errors = sum(1 for f in failures if f.severity == "error")
    counts = Counts(errors=errors, summary_seen=True) if errors is not None else Counts()
    return failures, counts


def _tsc_detail(lines: list[str], start: int) -> list[str]:
    detail: list[str] = []
    for line in lines[start : start + 40]:
        if line and not line[0].isspace() and not line[0].isdigit():
            break  # the next diagnostic or the summary
        if line.strip() and not set(line.strip()) <= set("~^ "):
            detail.append(line.rstrip())
    return detail


def _tsc_failure(m: re.Match[str], detail: list[str], root: str) -> Failure:
    file = relative(m["file"], root)
    return Failure(
        kind=Kind.TYPE,
        id=f"{file}:{m['line']}:{m['col']} {m['code']}",
        file=file,
        line=to_int(m["line"]),
        column=to_int(m["col"]),
        code=m["code"],
        error_type=m["sev"],
        message=m["msg"].strip(),
        detail=capped(detail),
        severity=m["sev"],
    )


def _eslint(lines: list[str], root: str) -> tuple[list[Failure], Counts]:
    json_line = next((line for line in lines if line.startswith('[{"filePath"')), None)
    if json_line is not None:
        return _eslint_json(json_line, root), Counts()
    failures: list[Failure] = []
    file = ""
    counts = Counts()
    for line in lines:
        if line and not line[0].isspace():
            s = _ESLINT_SUMMARY.match(line)
            if s:
                counts = Counts(
                    errors=int(s["errors"]), warnings=int(s["warnings"]), summary_seen=True
                )
            file = relative(line.strip(), root) if not s and ("/" in line or "." in line) else file
            continue
        m = _ESLINT_ROW.match(line)
        if m and file and len(failures) < MAX_FAILURES:
            rule, message = _rule_and_message(m["rest"])
            failures.append(_lint(file, m["line"], m["col"], m["sev"], rule, message))
    return failures, counts


def _rule_and_message(rest: str) -> tuple[str, str]:
    """A lint row's "message  rule" (columns two or more spaces apart); a rule is one word."""
    parts = re.split(r"\s{2,}", rest.strip())
    rule = parts[-1] if len(parts) > 1 and _RULE.match(parts[-1]) else ""
    return rule, " ".join(parts[:-1] if rule else parts)


def _eslint_crash(lines: list[str], root: str) -> Failure:
    """ESLint's 'Oops! Something went wrong!': the exception it died of, where it was raised (node's
    header for a file that did not compile) and its stack, outermost first."""
    start = next(i for i, line in enumerate(lines) if ESLINT_CRASH in line)
    body = [line for line in lines[start + 1 :] if line.strip() and not line.startswith("ESLint: ")]
    header = next((h for h in map(_NODE_HEADER.match, body) if h), None)
    error = next((e for e in map(_NODE_ERROR.match, body) if e), None)
    frames = _node_frames(body, root)
    if header:
        frames.append(Frame(file=relative(header["file"], root), line=to_int(header["line"])))
    where = frames[-1] if frames else Frame(file="")
    source = body[1 : body.index(error.group(0))] if header and error else []
    return Failure(
        kind=Kind.CRASH,
        id="ESLint crashed",
        file=where.file,
        line=where.line,
        error_type=error["type"] if error else "",
        message=error["msg"] if error else (body[0].strip() if body else ESLINT_CRASH),
        frames=tuple(frames),
        detail=capped([line.rstrip() for line in source]),
    )


def _node_frames(lines: list[str], root: str) -> list[Frame]:
    """A node stack's ``at fn (file:line:col)`` lines as frames, outermost first."""
    stack = [a for a in map(_NODE_AT.match, lines) if a]
    return [
        Frame(file=relative(a["file"], root), line=to_int(a["line"]), function=a["fn"] or "")
        for a in reversed(stack)
    ]


def _rule_crash(lines: list[str], root: str) -> list[Failure]:
    """A lint rule that threw: the error, where it was raised (the innermost frame) and the stack;
    the file being linted and the rule are its detail, not its location."""
    at = next(i for i, line in enumerate(lines) if line.startswith("Occurred while linting "))
    error = _NODE_ERROR.match(lines[at - 1]) if at else None
    frames = tuple(_node_frames(lines[at + 1 : at + 60], root))
    if error is None or not frames:
        return []
    linted = relative(lines[at].removeprefix("Occurred while linting ").strip(), root)
    rule = [lines[at + 1]] if lines[at + 1 : at + 2] and lines[at + 1].startswith("Rule: ") else []
    return [
        Failure(
            kind=Kind.CRASH,
            id="a lint rule crashed",
            file=frames[-1].file,
            line=frames[-1].line,
            error_type=error["type"],
            message=error["msg"],
            frames=frames,
            detail=(f"while linting {linted}", *rule),
        )
    ]


def _pretty(lines: list[str], root: str, types: bool) -> tuple[list[Failure], Counts]:
    """eslint-formatter-pretty, as xo and tsd print it; tsd's rows are type errors, no rule."""
    failures: list[Failure] = []
    totals = {"error": 0, "warning": 0}
    seen = False
    file = ""
    for line in lines:
        header = _PRETTY_FILE.match(line)
        if header:
            file = relative(header["file"], root)
            continue
        total = _PRETTY_TOTAL.match(line)
        if total:
            totals[total["what"]], seen = int(total["n"]), True
            continue
        row = _PRETTY_ROW.match(line)
        if row and file:  # all of them: the repository's own may come after thousands of theirs
            sev = "error" if row["sym"] == "\u2716" else "warning"
            found = _lint(file, row["line"], row["col"], sev, *_rule_and_message(row["rest"]))
            failures.append(replace(found, kind=Kind.TYPE) if types else found)
    counts = Counts(errors=totals["error"], warnings=totals["warning"], summary_seen=seen)
    return failures, counts


def _is_tsd(argv: tuple[str, ...], text: str) -> bool:
    """tsd checks types; xo lints (its rows end with a rule name)."""
    return any("tsd" in arg.split() for arg in argv) or "> tsd" in text or "&& tsd" in text


def _eslint_json(line: str, root: str) -> list[Failure]:
    try:
        data = json.loads(line)
    except ValueError:
        return []
    failures: list[Failure] = []
    for entry in data if isinstance(data, list) else []:
        if not isinstance(entry, dict):
            continue
        file = relative(str(entry.get("filePath", "")), root)
        for msg in entry.get("messages") or []:
            if isinstance(msg, dict) and len(failures) < MAX_FAILURES:
                sev = "error" if msg.get("severity") == 2 or msg.get("fatal") else "warning"
                failures.append(
                    _lint(
                        file,
                        str(msg.get("line", "")),
                        str(msg.get("column", "")),
                        sev,
                        str(msg.get("ruleId") or ""),
                        str(msg.get("message", "")),
                    )
                )
    return failures


def _lint(file: str, line: str, col: str, sev: str, rule: str, message: str) -> Failure:
    return Failure(
        kind=Kind.LINT,
        id=f"{file}:{line}:{col} {rule}".strip(),
        file=file,
        line=to_int(line),
        column=to_int(col),
        code=rule,
        error_type=sev,
        message=message.strip(),
        severity=sev,
    )


def _prettier(lines: list[str]) -> list[Failure]:
    summary = next((line[7:] for line in lines if line.startswith("[warn] Code style issues")), "")
    failures: list[Failure] = []
    for line in lines:
        if line.startswith("[warn] ") and not line.startswith("[warn] Code style issues"):
            m = _PRETTIER_WARN.match(line)
            if m and len(failures) < MAX_FAILURES:
                failures.append(_format_issue(m["file"].strip(), summary))
        elif line.startswith("[error] ") and (e := _PRETTIER_ERROR.match(line)):
            failures.append(
                Failure(
                    kind=Kind.FORMAT,
                    id=e["file"],
                    file=e["file"],
                    line=to_int(e["line"]),
                    column=to_int(e["col"]),
                    error_type=e["type"],
                    message=e["msg"],
                )
            )
    return failures


def _format_issue(file: str, summary: str) -> Failure:
    """prettier's closing 'Code style issues found in the above file' points at the list above it:
    the digest names each file on its own, with the command that formats it."""
    total = [] if not summary or "the above file" in summary else [summary]
    return Failure(
        kind=Kind.FORMAT,
        id=file,
        file=file,
        error_type="Code style issues",
        message="not formatted as prettier formats it",
        detail=capped([f"run `prettier --write {file}`", *total]),
    )

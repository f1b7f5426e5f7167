"""Ground truth shared by the JS, Go and Rust readers: what a runner's own report says.

Nothing here imports greenloop: the facts come from the runners' structured reports
(JSON, JUnit XML, TAP) or, where a runner has none, from the fixed lines it prints
for one failure, read by the few lines below and cross-checked by a second run.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_TYPED = re.compile(r"^\s*(?:Uncaught )?((?:[A-Z]\w*)?(?:Error|Exception))(?: \[\w+\])?:\s*(.*)$")


@dataclass(frozen=True, slots=True, kw_only=True)
class Truth:
    """What the runner's report says about one run."""

    ids: tuple[str, ...] = ()
    error_type: str | None = None
    message: str | None = None
    passed: int | None = None
    failed: int | None = None
    skipped: int | None = None
    source: str = ""
    killed: bool = False
    """The runner's report says a test process died from a signal (cargo: ``signal: 11``)."""
    notes: tuple[str, ...] = field(default=())

    def counts(self) -> dict[str, int | None]:
        return {"passed": self.passed, "failed": self.failed, "skipped": self.skipped}


def strip_ansi(text: str) -> str:
    return ANSI.sub("", text)


def split_error(text: str) -> tuple[str | None, str | None]:
    """``(type, message)`` from the first non-empty line of an error text."""
    for line in strip_ansi(text).splitlines():
        if line.strip():
            match = _TYPED.match(line)
            if match:
                return match[1], match[2].strip() or None
            return None, line.strip()
    return None, None


def error_in(text: str) -> tuple[str | None, str | None]:
    """The first ``SomethingError: message`` line anywhere in ``text``."""
    for line in strip_ansi(text).splitlines():
        match = _TYPED.match(line.lstrip("# "))  # node's TAP puts a load error under "# "
        if match:
            return match[1], match[2].strip() or None
    return None, None


def tap_failures(text: str) -> tuple[list[tuple[str, str]], dict[str, int]]:
    """Leaf ``not ok`` test points of a (possibly nested) TAP stream, with their YAML block.

    Returns ``[(id, yaml), ...]`` first failure first and ``{pass, fail, skip}`` of leaves.
    """
    lines = strip_ansi(text).splitlines()
    points: list[tuple[int, bool, str, str, int]] = []  # indent, ok, title, yaml, index
    for index, line in enumerate(lines):
        match = re.match(r"^(\s*)(ok|not ok) \d+(?: - (.*?))?(\s+# (?:SKIP|TODO).*)?$", line)
        if match:
            yaml = _yaml_after(lines, index, len(match[1]))
            skip = bool(match[4])
            points.append((len(match[1]), match[2] == "ok" or skip, match[3] or "", yaml, index))
    failures: list[tuple[str, str]] = []
    tally = {"pass": 0, "fail": 0, "skip": 0}
    for i, (indent, ok, title, yaml, _) in enumerate(points):
        if _has_children(points, i, indent):
            continue  # a subtest summary point (tap nests a file's tests under it)
        skipped = "# SKIP" in lines[points[i][4]] or "# TODO" in lines[points[i][4]]
        tally["skip" if skipped else "pass" if ok else "fail"] += 1
        if not ok:
            failures.append((" > ".join([*_ancestors(points, i), _title(title)]), yaml))
    return failures, tally


def _title(title: str) -> str:
    return re.sub(r"\s+# time=[\d.]+m?s$", "", title)


def _ancestors(points: list[tuple[int, bool, str, str, int]], i: int) -> list[str]:
    """Titles of the enclosing subtests (TAP 13 prints a subtest's point after its children)."""
    chain: list[str] = []
    indent = points[i][0]
    for later in points[i + 1 :]:
        if later[0] < indent:
            chain.insert(0, _title(later[2]))
            indent = later[0]
    return chain


def _has_children(points: list[tuple[int, bool, str, str, int]], i: int, indent: int) -> bool:
    """A point whose preceding deeper points belong to it (TAP 13 subtests print first)."""
    return i > 0 and points[i - 1][0] > indent


def _yaml_after(lines: list[str], index: int, indent: int) -> str:
    if index + 1 >= len(lines) or lines[index + 1].strip() != "---":
        return ""
    block: list[str] = []
    for line in lines[index + 2 :]:
        if line.strip() == "...":
            break
        block.append(line[indent:])
    return "\n".join(block)


def yaml_field(yaml: str, name: str) -> str | None:
    """A top-level-ish scalar (or the first line of a block scalar) from a TAP YAML block."""
    lines = yaml.splitlines()
    keys = [(i, m) for i, line in enumerate(lines) if (m := re.match(rf"^(\s*){name}:\s*(.*)$", line))]
    # the least indented: ava 6 prints the thrown error's util.inspect (`message: '…',`) under
    # `values:` before its own top-level `message:`
    for index, match in sorted(keys, key=lambda k: len(k[1][1]))[:1]:
        if match:
            value = match[2].strip()
            if value in ("|-", "|", ">-", ">", "") and index + 1 < len(lines):
                value = lines[index + 1].strip()
            return _unquote(value) or None
    return None


def _unquote(value: str) -> str:
    """A YAML scalar: ``'it''s'`` -> ``it's``, ``"a"`` -> ``a``."""
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'")
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1].replace('\\"', '"')
    return value


# ---- the corpus interface: a Truth function per reader (common.Truth) ----

TEST_SOURCES = ("json report", "mocha", "node", "ava", "tap", "uvu", "go test", "libtest", "jasmine")


def make_truth(reader: Callable[..., Truth], *, counts_only_if: str = "") -> Callable[..., object]:
    """A ``common.Truth``: re-run with the runner's reporter (``truth_argv``), read the report.

    ``counts_only_if``: the first run's output must contain it for the report's counts to hold (a
    test file run by ``node file.js`` that dies before node:test starts prints no summary: the
    second run, under ``node --test``, counts the file as a failed test).
    """

    def truth(project: Any, runner: Any, done: Any, mutation: Any) -> object:
        import common

        cwd = project.root / runner.cwd
        report = common.WORK / f".{project.name}-report"
        report.unlink(missing_ok=True)
        argv = _with_report(runner.truth_argv or runner.argv, str(report))
        env = common.run_env(project, runner)
        again = common.run(argv, cwd, env, runner.timeout)
        text = report.read_text("utf-8", "replace") if report.exists() else again.stdout + "\n" + again.stderr
        goflags = dict(runner.env).get("GOFLAGS", "")
        found = quiet_counts(reader(text, root=cwd), runner.argv, goflags)
        if counts_only_if and counts_only_if not in done.stdout + done.stderr:
            found = dataclasses.replace(found, passed=None, failed=None, skipped=None)
        shown = argv if isinstance(argv, str) else " ".join(argv)
        how = f"second run: {shown.replace(str(report), 'REPORT')} (exit {again.exit_code}); {found.source}"
        return facts_of(found, done, mutation, how=how, frame=_frame(project, runner, mutation))

    return truth


def quiet_counts(found: Truth, argv: tuple[str, ...] | str, goflags: str = "") -> Truth:
    """``go test`` without ``-v`` (in argv or GOFLAGS) prints failures only: no passes nor skips."""
    words = [*(argv.split() if isinstance(argv, str) else argv), *goflags.split()]
    if found.source.startswith("go test") and "-v" not in words and found.failed is not None:
        return dataclasses.replace(found, passed=None, skipped=None, source=found.source + " (quiet run: failed count only)")
    return found


def _with_report(argv: tuple[str, ...] | str, report: str) -> tuple[str, ...] | str:
    """``{report}``: the report file; ``{conformance}``: this folder (a reporter module of ours)."""
    here = str(Path(__file__).resolve().parent)
    if isinstance(argv, str):
        return argv.replace("{report}", report).replace("{conformance}", here)
    return tuple(a.replace("{report}", report).replace("{conformance}", here) for a in argv)


def _frame(project: Any, runner: Any, mutation: Any) -> str | None:
    if mutation is None:
        return None
    path = (project.root / mutation.file).relative_to(project.root / runner.cwd)
    return f"{path.as_posix()}:{mutation.line}"


def facts_of(found: Truth, done: Any, mutation: Any, *, how: str, frame: str | None) -> object:
    from common import Facts

    verdict = verdict_of(done, found)
    # a trailing colon only announces the diff below it (node, ava): not part of the message
    message = short(found.message).removesuffix(":") or None if found.message else None
    error_type = found.error_type
    if verdict == "failed" and message is None:  # the report has no error: read the crash
        raw = done.stdout + "\n" + done.stderr
        error_type, typed = error_in(raw)
        message = short(typed or _first_error_line(raw) or "") or None
    return Facts(
        verdict=verdict,
        failing_ids=found.ids,
        error_type=error_type,
        message=message,
        frame=frame if verdict != "green" else None,
        counts=_counts(found),
        ground_truth=how,
    )


def verdict_of(done: Any, found: Truth) -> str:
    """From the exit code and the report, never from greenloop.

    The baseline is green here and a mutant differs from it by one committed line of project
    code, so a mutant's non-zero exit (not a signal, not a timeout) is a code failure.
    """
    if done.timed_out:
        return "timeout"
    if done.exit_code < 0 or found.killed:
        return "killed"
    if done.exit_code == 0:
        return "untrusted" if found.failed or _diagnosed(done) else "green"
    return "failed"


# ts-jest's own diagnostic of a source it compiled anyway: "ts-jest[ts-compiler] (WARN) f.ts:13:24 -
# error TS1005: ')' expected." (TypeScript's recovery emitted code that passes: jest exits 0)
_TS_JEST_ERROR = re.compile(r"^ts-jest\[[\w-]+\] \(WARN\) \S+:\d+:\d+ - error TS\d+:", re.M)


def _diagnosed(done: Any) -> bool:
    return bool(_TS_JEST_ERROR.search(strip_ansi(done.stdout + "\n" + done.stderr)))


def _counts(found: Truth) -> dict[str, int] | None:
    if not found.source.startswith(TEST_SOURCES):
        return None if found.failed is None else {"failed": found.failed}
    if found.source.endswith("(quiet run: failed count only)"):
        return {"failed": found.failed}  # type: ignore[dict-item]
    values = (found.passed, found.failed, found.skipped)
    if any(v is None for v in values):
        return None  # the tests never ran (a load or build failure): no counts to compare
    return {"passed": found.passed, "failed": found.failed, "skipped": found.skipped}  # type: ignore[dict-item]


def short(message: str, limit: int = 120) -> str:
    """The first non-empty line, cut at a word boundary (as python.short does)."""
    first = next((ln.strip() for ln in strip_ansi(message).splitlines() if ln.strip()), "")
    if len(first) <= limit:
        return first
    cut = first[:limit]
    return cut[: cut.rfind(" ")] if " " in cut else cut


# eslint's stylish row: "  47:41  error  Parsing error: Unexpected token {[  rule]"
_ESLINT_ROW = re.compile(r"^\s+\d+:\d+\s+error\s+(.+?)(?:\s{2,}[@\w/-]+)?\s*$")


def _first_error_line(raw: str) -> str | None:
    """The first line naming an error; of an eslint row (a pretest lint stopped the run), its message."""
    for line in strip_ansi(raw).splitlines():
        if re.search(r"\b\w*Error\b|\berror\b", line):
            row = _ESLINT_ROW.match(line)
            return row[1] if row else line.strip()
    return None

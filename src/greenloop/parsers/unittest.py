"""unittest (``python -m unittest``): FAIL/ERROR blocks, "Ran N tests", "OK" / "FAILED (failures=1, errors=1)"."""

from __future__ import annotations

import re
from dataclasses import replace

from greenloop.parsers.model import Counts, Failure, Frame, Kind, ParseResult, ParserInput
from greenloop.parsers.pytraceback import parse_traceback, relative

MAX_FAILURES = 500

# the title, then the docstring's first line when there is one ("Doctest: pkg.mod.func" for a doctest);
# unittest-xml-reporting's runner (Django's --testrunner xmlrunner...) adds the time: "FAIL [0.004s]: "
_BLOCK = re.compile(
    r"^={50,}\n(?P<cat>FAIL|ERROR|UNEXPECTED SUCCESS)(?: \[[\d.]+s\])?: (?P<title>[^\n]+)\n"
    r"(?:[^\n]*\n)?-{50,}\n",
    re.M,
)
_END = re.compile(r"^(?:={50,}|-{50,})$", re.MULTILINE)
# a DocTestCase's block goes on past its traceback: doctest's own report, one per failed example,
# each after a rule, up to the next block or unittest's closing rule and "Ran N tests"
_DOCTEST_END = re.compile(r"^(?:={50,}$|-{50,}\nRan \d+ tests?)", re.MULTILINE)
_DOCTEST_RAISED = re.compile(r"^(?P<type>\w+): (?P<msg>Failed doctest test for [^\n]+)$", re.M)
_EXAMPLE_AT = re.compile(r'^File "(?P<file>[^"\n]+)", line (?P<line>\d+), in (?P<name>\S+)$', re.M)
MAX_EXAMPLE_LINES = 8
# "test_x (pkg.module.Class.test_x)" (3.11+) or "test_x (pkg.module.Class)" (older)
_TITLE = re.compile(r"^(?P<name>\S+) \((?P<where>[^)]+)\)")
_RAN = re.compile(r"^Ran (\d+) tests? in [\d.]+s$", re.MULTILINE)
_RESULT = re.compile(r"^(?P<status>OK|FAILED)(?: \((?P<parts>[^)\n]*)\))?[ \t]*$", re.MULTILINE)
_PART = re.compile(r"(failures|errors|skipped|expected failures|unexpected successes)=(\d+)")
# verbosity 1: one mark per result (``.`` passed, ``s`` skipped, ``F``, ``E``, ``x``, ``u``); -v:
# ``test_x (pkg.mod.Class.test_x) ... ok``
_PROGRESS = re.compile(r"^[.sFExu]+$", re.MULTILINE)
_OK_LINE = re.compile(r"^\S+ \([^)\n]+\)(?: \[[^\n]*\])? \.\.\. ok$", re.MULTILINE)


def parse(inp: ParserInput) -> ParseResult:
    text = inp.stderr + "\n" + inp.stdout if inp.stdout else inp.stderr
    failures: list[Failure] = []
    for m in _BLOCK.finditer(text):
        if len(failures) >= MAX_FAILURES:
            break
        doctest = "\nDoctest: " in m.group(0)
        end = (_DOCTEST_END if doctest else _END).search(text, m.end())
        body = text[m.end() : end.start() if end else len(text)]
        made = _doctest_failure if doctest else _failure
        failures.append(made(m["cat"], m["title"], body, inp.root))
    counts = parse_counts(text)
    return ParseResult(tool="unittest", failures=tuple(failures), counts=_passed(counts, failures))


def _passed(counts: Counts, failures: list[Failure]) -> Counts:
    """Each failing subtest is one FAIL/ERROR block and one count, but "Ran N" counts the test once."""
    if not counts.summary_seen or len(failures) != counts.failed + counts.errors + counts.xpassed:
        return counts  # a block is missing: the distinct ids would undercount
    if _subtests_skipped(counts):
        return counts  # passed: the progress's own marks (parse_counts)
    tests = len({f.id for f in failures})
    others = tests + counts.skipped + counts.xfailed
    return replace(counts, passed=max((counts.collected or 0) - others, 0))


def test_id(title: str) -> str:
    """``test_x (pkg.mod.Class.test_x)`` -> ``pkg.mod.Class.test_x``; older ``(pkg.mod.Class)`` too."""
    m = _TITLE.match(title.strip())
    if m is None:
        return title.strip()
    name, where = m["name"], m["where"]
    return where if where.endswith("." + name) else f"{where}.{name}"


def _failure(category: str, title: str, body: str, root: str) -> Failure:
    tb = parse_traceback(body.split("\n"), root)
    where = tb.frames[-1] if tb.frames else None
    error_type = tb.error_type or ("UnexpectedSuccess" if category.startswith("UNEXPECTED") else "")
    return Failure(
        kind=Kind.TEST,
        id=test_id(title),
        file=where.file if where else "",
        line=where.line if where else None,
        error_type=error_type,
        message=tb.message,
        frames=tb.frames,
        detail=_loader_line(body) + tb.detail,
    )


def _doctest_failure(category: str, title: str, body: str, root: str) -> Failure:
    """unittest's DocTestCase (``doctest.DocTestSuite``, jsonpatch's tests.py): its traceback
    ends ``AssertionError: Failed doctest test for jsonpatch.make_patch`` and the docstring's
    ``File …`` line, then doctest's report of each failed example. The failure is at the first
    failed example, with its source and what it printed or raised."""
    raised = _DOCTEST_RAISED.search(body)
    example = _EXAMPLE_AT.search(body, raised.end()) if raised else None
    if raised is None or example is None:
        return _failure(category, title, body, root)
    tb = parse_traceback(body[: raised.end()].split("\n"), root)
    report = body[example.end() :].split("\n-", 1)[0].strip("\n").split("\n")
    said = [line.strip() for line in report if line.strip()]
    shown = [*said[:2], *(said[-1:] if len(said) > MAX_EXAMPLE_LINES else said[2:])]
    file = relative(example["file"], root)
    at = Frame(file=file, line=int(example["line"]), function=example["name"])
    return Failure(
        kind=Kind.TEST,
        id=test_id(title),
        file=file,
        line=at.line,
        error_type=raised["type"],
        message=raised["msg"],
        frames=(*tb.frames, at),
        detail=tuple(shown[:MAX_EXAMPLE_LINES]),
    )


def _loader_line(body: str) -> tuple[str, ...]:
    """A module that failed to import: unittest's ``ImportError: Failed to import test module: X``
    wraps the cause (the message above is the cause's): say that none of its tests ran."""
    first = body.lstrip("\n").split("\n", 1)[0].strip()
    return (first,) if first.startswith("ImportError: Failed to import test module:") else ()


def parse_counts(text: str) -> Counts:
    ran = list(_RAN.finditer(text))
    result = list(_RESULT.finditer(text, ran[-1].end())) if ran else []
    if not ran or not result:
        return Counts(collected=int(ran[-1].group(1)) if ran else None)
    values = {key: int(n) for key, n in _PART.findall(result[0]["parts"] or "")}
    total = int(ran[-1].group(1))
    failed, errors = values.get("failures", 0), values.get("errors", 0)
    skipped, xfailed = values.get("skipped", 0), values.get("expected failures", 0)
    xpassed = values.get("unexpected successes", 0)
    passed = total - failed - errors - skipped - xfailed - xpassed
    if passed < 0:  # skipped subtests (pathspec's backends): each one counted, its test ran
        passed = _passed_marks(text[: ran[-1].start()])
    return Counts(
        collected=total,
        passed=max(passed, 0),
        failed=failed,
        errors=errors,
        skipped=skipped,
        xfailed=xfailed,
        xpassed=xpassed,
        summary_seen=True,
    )


def _subtests_skipped(counts: Counts) -> bool:
    """More skips and failures than tests ran: some are subtests' (``self.skipTest`` inside
    ``subTest``, counted one each in ``skipped=``), whose tests ran and passed."""
    others = counts.failed + counts.errors + counts.skipped + counts.xfailed + counts.xpassed
    return others > (counts.collected or 0)


def _passed_marks(text: str) -> int:
    """The tests that passed, as unittest's progress marks them: one ``.`` each (verbosity 1), or
    one ``... ok`` line each (``-v``); a skipped subtest prints its own ``s`` or ``skipped``."""
    verbose = len(_OK_LINE.findall(text))
    dots = sum(m.group(0).count(".") for m in _PROGRESS.finditer(text))
    return verbose or dots

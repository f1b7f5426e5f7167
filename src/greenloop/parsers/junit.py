"""JUnit XML reports (Surefire, Gradle, node --test, pytest --junitxml, CTest, PHPUnit …), read with
defusedxml. Fed from ``ParserInput.artifacts`` entries whose names end with ``.xml``."""

from __future__ import annotations

from xml.etree.ElementTree import Element

from defusedxml import ElementTree

from greenloop.parsers.generic import MAX_FAILURES, capped, relative, to_int
from greenloop.parsers.js_tests import js_frames, project_frame
from greenloop.parsers.model import Counts, Failure, Frame, Kind, ParseResult, ParserInput

MAX_XML = 20_000_000


def parse(inp: ParserInput) -> ParseResult:
    failures: list[Failure] = []
    outcomes: list[tuple[str, str]] = []
    totals = [0, 0, 0, 0, 0]  # tests, failures, errors, skipped, passed
    notes: list[str] = []
    reports = [(n, t) for n, t in inp.artifacts if n.lower().endswith(".xml")]
    for name, text in reports:
        try:
            root = ElementTree.fromstring(text[:MAX_XML])
        except Exception as exc:  # malformed, truncated or hostile XML: a note, never a crash
            notes.append(f"{name}: unreadable JUnit XML ({type(exc).__name__})")
            continue
        for case in root.iter("testcase"):
            _case(case, inp.root, failures, totals)
            outcomes.append((_case_id(case), _case_outcome(case)))
    counts = Counts()
    if reports and len(notes) < len(reports):
        tests, failed, errors, skipped, passed = totals
        counts = Counts(
            collected=tests,
            passed=passed,
            failed=failed,
            errors=errors,
            skipped=skipped,
            summary_seen=True,
        )
    return ParseResult(
        tool="junit",
        failures=tuple(failures[:MAX_FAILURES]),
        counts=counts,
        notes=tuple(notes),
        outcomes=tuple(outcomes),
    )


def _case_id(case: Element) -> str:
    """``classname.name`` as the failure's id (node --test's placeholder classname ``test`` left out)."""
    classname, name = case.get("classname", ""), case.get("name", "")
    return f"{classname}.{name}" if classname not in ("", name, "test") else name


def _case_outcome(case: Element) -> str:
    tags = {c.tag for c in case}
    if "error" in tags:
        return "error"
    if "failure" in tags:
        return "failed"
    return "skipped" if "skipped" in tags else "passed"


def _case(case: Element, root: str, failures: list[Failure], totals: list[int]) -> None:
    totals[0] += 1
    problem = next((c for c in case if c.tag in ("failure", "error")), None)
    if problem is None:
        skipped = any(c.tag == "skipped" for c in case)
        totals[3 if skipped else 4] += 1
        return
    totals[1 if problem.tag == "failure" else 2] += 1
    if len(failures) < MAX_FAILURES:
        failures.append(_failure(case, problem, root))


def _failure(case: Element, problem: Element, root: str) -> Failure:
    body = (problem.text or "").strip().split("\n")
    frames = _frames(body, root)
    where = project_frame(frames)
    file = relative(case.get("file", ""), root) or (where.file if where else "")
    message = (problem.get("message") or (body[0] if body else "")).strip()
    return Failure(
        kind=Kind.TEST,
        id=_case_id(case),
        file=file,
        line=to_int(case.get("line")) or (where.line if where else None),
        error_type=(problem.get("type") or "").strip() or problem.tag,
        message=message.split("\n")[0][:500],
        frames=frames,
        detail=capped([b for b in body if b.strip() and not b.lstrip().startswith("at ")][:15]),
    )


def _frames(body: list[str], root: str) -> tuple[Frame, ...]:
    """Java/JS ``at …`` lines; Java's ``at pkg.Cls.m(File.java:12)`` keeps only the file name."""
    frames = list(js_frames(body, root))
    if frames:
        return tuple(frames)
    java = []
    for line in body[:60]:
        s = line.strip()
        if s.startswith("at ") and s.endswith(")") and "(" in s:
            fn, loc = s[3:-1].rsplit("(", 1)
            file, _, num = loc.partition(":")
            java.append(Frame(file=file, line=to_int(num), function=fn))
    return tuple(reversed(java))

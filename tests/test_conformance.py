"""Conformance on real projects (issues 10, 11): every case under tests/resources/real/ gets its verdict and facts.

Each case is a real open-source project at a pinned commit, unmodified (``-0``) or with one seeded,
committed one-line bug, run as its maintainers run it; the facts come from the runner's own
structured report (JUnit XML, unittest's result API, ``--output json``), never from our parsers
(scripts/conformance/). The output goes through parse -> classify -> digest exactly as ``greenloop
check`` does, and the test asserts the verdict class and every fact the output contains.

Cases the current code gets wrong are listed in KNOWN_WRONG with the reason and the issue; the test
checks that each of them STILL fails, so a fix must remove its entry (a strict xfail, never a skip).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from greenloop.classify import classify
from greenloop.detect import Cascade, Stage
from greenloop.digest import build_digest
from greenloop.parsers import ParserInput, installed, parse_output
from greenloop.process import ProcessResult, strip_ansi
from greenloop.report import check_json
from greenloop.verify import CheckResult, StageRun

REAL = Path(__file__).parent / "resources" / "real"
CASES = sorted(p.parent for p in REAL.glob("*/*/case.json"))
BUDGET = 2000

# case id -> why the current code gets it wrong (and the issue that fixes it). Keep it honest: the
# test fails when a listed case starts to pass, so whoever fixes it removes the line.
KNOWN_WRONG: dict[str, str] = {}


def case_id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def check(data: dict[str, Any]) -> dict[str, Any]:
    """``greenloop check``'s JSON for this captured run (ProcessResult -> parse -> classify -> digest)."""
    argv = tuple(data["argv"]) if isinstance(data["argv"], list) else ("sh", "-c", data["argv"])
    code = data["exit_code"]
    sig = -code if code < 0 else None
    stdout, stderr = strip_ansi(data["stdout"]), strip_ansi(data["stderr"])
    result = ProcessResult(
        argv=argv,
        exit_code=128 + sig if sig else code,
        signal=sig,
        timed_out=bool(data.get("timed_out")),
        duration_s=1.0,
        stdout=stdout,
        stderr=stderr,
        merged=stdout + stderr,
    )
    root = data["cwd_placeholder"]
    parsed = parse_output(
        ParserInput(
            argv=argv, exit_code=result.exit_code, stdout=stdout, stderr=stderr,
            merged=result.merged, root=root,
        )
    )  # fmt: skip
    modules = frozenset(data.get("repo_modules", ()))
    parsed = installed.own_copies(parsed, Path(root), modules)
    stage = Stage(name="verify", command=argv, why="conformance")
    verdict = classify(result, parsed, command=stage.display, repo_modules=modules)
    run = StageRun(stage=stage, result=result, parsed=parsed, classification=verdict)
    checked = CheckResult(
        cascade=Cascade(stages=(stage,), source="conformance"),
        runs=(run,),
        verdict=verdict.verdict,
        duration_s=1.0,
    )
    out = check_json(checked, build_digest(checked, root=root, budget=BUDGET))
    out["counts"] = asdict(parsed.counts)  # a green run's counts are evidence too (issue 10)
    return out


def frame_found(frame: str, text: str) -> bool:
    """``c.py:6`` or ``File ".../c.py", line 6`` (the file's basename and the line on one line)."""
    path, _, line = frame.rpartition(":")
    base = re.escape(path.rsplit("/", 1)[-1])
    return re.search(rf"{base}\b[^\n]*?\b{line}\b", text) is not None


def mismatches(data: dict[str, Any]) -> list[str]:
    """Every fact of the case that greenloop's verdict, digest or counts gets wrong."""
    got = check(data)
    facts, unverified = data["facts"], set(data["facts_unverified"])
    digest = got["digest"]
    wrong = []
    if got["verdict"] != facts["verdict"]:
        wrong.append(f"verdict {got['verdict']!r}, expected {facts['verdict']!r}")
    ids = facts["failing_ids"]
    if ids and f"failing_ids:{ids[0]}" not in unverified and ids[0] not in digest:
        wrong.append(f"first failing id {ids[0]!r} not in the digest")
    for key in ("error_type", "message"):
        value = facts[key]
        if value and f"{key}:{value}" not in unverified and value not in digest:
            wrong.append(f"{key} {value!r} not in the digest")
    frame = facts["frame"]
    if frame and f"frame:{frame}" not in unverified and not frame_found(frame, digest):
        wrong.append(f"frame {frame!r} not in the digest")
    if got["digest_tokens"] > BUDGET:
        wrong.append(f"digest of {got['digest_tokens']} tokens, over the {BUDGET} budget")
    wrong += phantoms(got["failures"], ids)
    return wrong + count_mismatches(facts.get("counts"), got["counts"])


def phantoms(failures: list[dict[str, Any]], truth: list[str]) -> list[str]:
    """Failing tests greenloop reports that the runner did not fail (Go's ``t.Log`` lines, issue 10)."""
    extra = [
        f["id"]
        for f in failures
        if f["kind"] == "test" and not any(f["id"] in t or t in f["id"] for t in truth)
    ]
    return [f"{len(extra)} phantom failing test(s): {extra[:3]}"] if extra else []


def count_mismatches(expected: dict[str, int] | None, counts: dict[str, Any]) -> list[str]:
    """passed, failed (+ errors) and skipped (+ xfailed) as the runner's report counts them.

    pytest 9's JUnit XML lists every subtest as a test case: its passed subtests count as passed.
    """
    if not expected:
        return []
    got = {
        "passed": counts["passed"] + counts["xpassed"] + counts["subtests_passed"],
        "failed": counts["failed"] + counts["errors"],
        "skipped": counts["skipped"] + counts["xfailed"],
    }
    return [
        f"{key}: {got[key]}, expected {value}"
        for key, value in expected.items()
        if got[key] != value
    ]


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((path / "case.json").read_text(encoding="utf-8"))
    return data


def test_conformance_corpus_has_cases_and_every_known_wrong_entry_names_one() -> None:
    ids = {case_id(p) for p in CASES}
    assert len(ids) >= 7
    assert set(KNOWN_WRONG) <= ids, sorted(set(KNOWN_WRONG) - ids)


@pytest.mark.parametrize("path", CASES, ids=case_id)
def test_conformance_case_gets_the_runners_verdict_and_every_fact(path: Path) -> None:
    wrong = mismatches(load(path))
    known = KNOWN_WRONG.get(case_id(path))
    if known is None:
        assert wrong == [], f"{case_id(path)}: {wrong}"
    else:
        assert wrong, f"{case_id(path)} passes now: remove it from KNOWN_WRONG ({known})"

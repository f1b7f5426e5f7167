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

import importlib.util
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from case_files import project_root
from greenloop.detect.stages import Cascade, Stage
from greenloop.digest import build_digest
from greenloop.parsers import ParserInput, installed, parse_output
from greenloop.processes.process import ProcessResult
from greenloop.processes.process_capture import strip_ansi
from greenloop.report.render import check_json
from greenloop.verify.cascade import CheckResult, StageRun
from greenloop.verify.classify import classify

REAL = Path(__file__).parent / "resources" / "real"
COMPARE = Path(__file__).parents[1] / "scripts" / "conformance" / "compare.py"
CASES = sorted(p.parent for p in REAL.glob("*/*/case.json"))
BUDGET = 2000


def _load_compare() -> Any:
    """scripts/conformance/compare.py, the comparison live.py uses too (not a package: by path)."""
    spec = importlib.util.spec_from_file_location("conformance_compare", COMPARE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


compare = _load_compare()

# case id -> why the current code gets it wrong (and the issue that fixes it). Keep it honest: the
# test fails when a listed case starts to pass, so whoever fixes it removes the line.
KNOWN_WRONG: dict[str, str] = {
    # a quiet go test 1.19 prints no test name when its -timeout panics: greenloop names the
    # top-level test from the goroutine dump; go test -json ends none of the 4 subtests running
    "go-test/mapstructure-4": "a -timeout panic names the top-level test, not its 4 running subtests",
}


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
    stage = Stage(name="verify", command=argv, why="conformance")
    with project_root(data) as files:  # the project's own files, where the verdict reads them
        parsed = installed.own_copies(parsed, files or Path(root), modules)
        verdict = classify(
            result, parsed, command=stage.display, repo_modules=modules,
            root=str(files) if files else "",
        )  # fmt: skip
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


def mismatches(data: dict[str, Any]) -> list[str]:
    """Every fact of the case that greenloop's verdict, digest or counts gets wrong."""
    return compare.mismatches(
        data["facts"], set(data["facts_unverified"]), check(data), budget=BUDGET
    )


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

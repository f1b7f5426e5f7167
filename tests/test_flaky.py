"""Failing-first iterations and flaky tests in the real loop: scripted agent, real git, real pytest."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from greenloop.agents.scripted import scripted
from greenloop.config import Config, StageSpec
from greenloop.loop.loop import LoopResult, run_loop
from greenloop.loop.policy import Result

PY = sys.executable
STAGE = (StageSpec(name="test", run=f"{PY} -m pytest -q -p no:cacheprovider"),)
CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
TEST_CALC = (
    "from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_mul():\n    assert mul(2, 4) == 8\n"
)
TEST_MORE = "def test_one():\n    pass\n\n\ndef test_two():\n    pass\n"
GITIGNORE = "__pycache__/\n.pytest_cache/\n"
ALMOST_ADD = {"replace": "calc.py", "old": "return a - b", "new": "return a + b + 1"}
FIX_ADD = {"replace": "calc.py", "old": "return a - b", "new": "return a + b"}
FIX_ADD_AFTER_ALMOST = {"replace": "calc.py", "old": "return a + b + 1", "new": "return a + b"}
BREAK_MUL = {"replace": "calc.py", "old": "return a * b", "new": "return a * b + 1"}
FIX_MUL = {"replace": "calc.py", "old": "return a * b + 1", "new": "return a * b"}
# Fails on the runs listed in FAIL_ON (counted in a file outside the repo): a real flaky test.
FLAKY_TEST = """\
from pathlib import Path

COUNTER = Path({counter!r})
FAIL_ON = {fail_on!r}


def test_flaky():
    n = int(COUNTER.read_text()) + 1 if COUNTER.exists() else 1
    COUNTER.write_text(str(n))
    assert n not in FAIL_ON, f"run {{n}} fails"
"""

# A test module whose import costs more CPU than the ordered runs allow for collecting the suite
HEAVY = (
    "import time\n\n_t = time.process_time()\nwhile time.process_time() - _t < 2.2:\n    pass\n\n\n"
    "def test_heavy():\n    pass\n"
)


def loop(root: Path, steps: list[list[dict[str, Any]]], **kw: Any) -> LoopResult:
    kw.setdefault("stages", STAGE)
    kw.setdefault("timeout", 60.0)
    return run_loop(root, scripted(steps), config=Config(**kw))


def record(result: LoopResult, name: str) -> str:
    return (Path(result.record_dir) / name).read_text()


def events(result: LoopResult) -> list[dict[str, Any]]:
    return [json.loads(line) for line in record(result, "events.jsonl").splitlines()]


@pytest.fixture
def calc_repo(make_repo: Callable[..., Path]) -> Path:
    return make_repo(
        {
            "calc.py": CALC,
            "test_calc.py": TEST_CALC,
            "test_more.py": TEST_MORE,
            ".gitignore": GITIGNORE,
        }
    )


def test_a_failing_subset_is_the_verdict_and_marked_in_the_report(calc_repo: Path) -> None:
    result = loop(calc_repo, [[ALMOST_ADD], [FIX_ADD_AFTER_ALMOST]])
    assert result.result is Result.SUCCESS
    assert [row.subset for row in result.history] == [False, True, False]
    # the failing test ran first, in the gate's own run, and failing it ended that run: no other
    # test ran (loop/ordered.py)
    log = record(result, "iter-1/verify.log")
    assert "a test run first failed; the rest not run" in log
    assert "1 failed in" in log
    assert " passed" not in log
    assert "on the previously failing tests only" in record(result, "iter-1/digest.md")
    assert "4 passed" in record(result, "iter-2/verify.log")  # the gate ran everything
    report = json.loads(record(result, "report.json"))
    assert [row["subset"] for row in report["history"]] == [False, True, False]


def test_success_is_never_declared_on_a_subset_that_passes(calc_repo: Path) -> None:
    # iteration 1 fixes add (its subset passes) but breaks mul: the full gate catches it (with
    # failing tests only before the gate; auto's affected step catches it sooner: test_affected)
    result = loop(
        calc_repo, [[FIX_ADD, BREAK_MUL], [FIX_MUL]], on_regression="continue", subset="failing"
    )
    assert result.result is Result.SUCCESS
    assert result.iterations == 2
    first = result.history[1]
    assert first.verdict == "failed"
    assert not first.subset
    assert "test_mul" in record(result, "iter-1/digest.md")
    assert "1 failed, 3 passed" in record(result, "iter-1/verify.log")
    subsets = [e for e in events(result) if e["kind"] == "subset"]
    assert [(e["iteration"], e["tests"], e["verdict"]) for e in subsets] == [
        (1, ["test_calc.py::test_add"], "green"),
        (2, ["test_calc.py::test_mul"], "green"),
    ]
    assert result.history[2].verdict == "green"
    assert not result.history[2].subset


def test_subset_off_runs_the_full_suite_every_iteration(calc_repo: Path) -> None:
    result = loop(calc_repo, [[ALMOST_ADD], [FIX_ADD_AFTER_ALMOST]], subset="off")
    assert result.result is Result.SUCCESS
    assert [row.subset for row in result.history] == [False, False, False]
    assert "deselected" not in record(result, "iter-1/verify.log")


def test_a_stop_after_a_failing_subset_is_confirmed_on_the_full_suite(calc_repo: Path) -> None:
    # the same add failure again would stall on the subset (after the first edit's one more try,
    # the README's exploration rule); the full run shows mul broke too
    same_add = {"replace": "calc.py", "old": "def add", "new": "# hm\ndef add"}
    result = loop(calc_repo, [[same_add, BREAK_MUL]])
    assert result.result is Result.REGRESSION
    stop = result.history[-1]
    assert not stop.subset
    assert stop.failures == 2


def test_a_flaky_test_is_classified_at_baseline_and_never_the_target(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    counter = tmp_path / "flaky-runs"
    root = make_repo(
        {
            "calc.py": CALC,
            "test_calc.py": TEST_CALC,
            "test_flaky.py": FLAKY_TEST.format(counter=str(counter), fail_on={1}),
            ".gitignore": GITIGNORE,
        }
    )
    result = loop(root, [[FIX_ADD]])
    assert result.result is Result.SUCCESS
    assert result.flaky == ("test_flaky.py::test_flaky",)
    assert any("test_flaky.py::test_flaky" in w for w in result.warnings)
    baseline_digest = record(result, "iter-0/digest.md")
    assert "Flaky (ignore): test_flaky.py::test_flaky" in baseline_digest
    assert "1 failed" in baseline_digest  # add only: the flaky failure is not the agent's target
    assert result.history[0].failures == 1
    assert json.loads(record(result, "report.json"))["flaky"] == ["test_flaky.py::test_flaky"]
    # both failing tests ran once more inside the baseline's own pytest run: no second start-up
    reruns = [e for e in events(result) if e["kind"] == "flaky_rerun"]
    assert next((sorted(e["tests"]), e.get("in_run")) for e in reruns) == (
        ["test_calc.py::test_add", "test_flaky.py::test_flaky"],
        True,
    )


def test_a_test_that_passes_in_the_subset_and_fails_in_the_gate_is_rerun_and_flaky(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    # runs: 1 baseline, 2 baseline re-run alone (both fail: a real target), 3 subset (passes),
    # 4 gate (fails: the flip), 5 re-run alone (passes) -> flaky, and the gate counts as green.
    # A suite whose collection is costly (HEAVY) keeps the subset a run of its own: in a cheap one
    # the subset runs inside the gate's run (loop/ordered.py), where a test cannot pass, then fail
    counter = tmp_path / "flaky-runs"
    root = make_repo(
        {
            "calc.py": CALC,
            "test_calc.py": TEST_CALC,
            "test_flaky.py": FLAKY_TEST.format(counter=str(counter), fail_on={1, 2, 4}),
            "test_heavy.py": HEAVY,
            ".gitignore": GITIGNORE,
        }
    )
    result = loop(root, [[FIX_ADD]])
    assert not any(e.get("in_gate") for e in events(result) if e["kind"] == "subset")
    assert counter.read_text() == "5"
    assert result.result is Result.SUCCESS
    assert result.flaky == ("test_flaky.py::test_flaky",)
    assert result.history[0].failures == 2  # at baseline it failed twice: a real failure then
    assert result.history[1].verdict == "green"
    assert not result.history[1].subset


def test_subset_off_never_reruns_a_failing_test(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    counter = tmp_path / "flaky-runs"
    root = make_repo(
        {
            "calc.py": CALC,
            "test_calc.py": TEST_CALC,
            "test_flaky.py": FLAKY_TEST.format(counter=str(counter), fail_on={1}),
            ".gitignore": GITIGNORE,
        }
    )
    result = loop(root, [[FIX_ADD]], subset="off")
    assert result.flaky == ()
    assert result.history[0].failures == 2
    assert result.result is Result.SUCCESS

"""Walkthrough findings (docs/WALKTHROUGH-FINDINGS.md): what a newcomer met running greenloop on real
repositories, each pinned by a real greenloop process on a real git repo."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

PY = sys.executable

CALC_BUGGY = "def double(x: int) -> int:\n    return x * 3\n"
CALC_TEST = "from calc import double\n\n\ndef test_double() -> None:\n    assert double(2) == 4\n"


def greenloop(root: Path, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PY, "-m", "greenloop", *args],
        cwd=root,
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_run_with_a_lint_stage_before_the_tests_calls_a_real_fix_success_not_suspicious(
    make_repo: Callable[..., Path],
) -> None:
    """ruff's "All checks passed!" (mypy's "Success: no issues found") is a summary of zero tests;
    it was taken for the suite's size, so every fixed run of a project with a lint or type stage
    ended SUSPICIOUS_PASS "0 tests collected"."""
    config = (
        f'[[stage]]\nname = "lint"\nrun = "{PY} -m ruff check --no-cache calc.py"\n\n'
        f'[[stage]]\nname = "test"\nrun = "{PY} -m pytest -q -p no:cacheprovider"\n'
    )
    root = make_repo({"calc.py": CALC_BUGGY, "test_calc.py": CALC_TEST, "greenloop.toml": config})
    fix = "sed -i 's/x \\* 3/x * 2/' calc.py"
    done = greenloop(root, "run", "--agent", fix, "-y", "--subset", "off")
    assert "SUCCESS" in done.stdout, done.stdout + done.stderr
    assert "0 tests collected" not in done.stdout
    assert done.returncode == 0


def test_run_with_an_agent_that_edits_nothing_says_so_and_where_its_output_is(
    make_repo: Callable[..., Path],
) -> None:
    """A misconfigured agent (no write permission, wrong directory) exited 0 without an edit and
    the run said "the agent is stuck on a wrong hypothesis": it never had one."""
    root = make_repo({"calc.py": CALC_BUGGY, "test_calc.py": CALC_TEST})
    done = greenloop(
        root, "run", "--agent", "echo looks fine to me", "-y", "--", PY, "-m", "pytest", "-q"
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "STALLED — the agent changed no file" in done.stdout
    assert "exited without changing a file" in done.stdout
    assert "iter-1/agent.txt" in done.stdout


def test_run_stopped_by_a_regression_reports_the_checkpoints_failures_and_names_the_kept_edit(
    make_repo: Callable[..., Path],
) -> None:
    """After the rollback the summary listed the reverted edit's failures as "still failing", the
    agent-facing note read "Your last edit was reverted: ." and "next" said "inspect the attempt
    ref" without naming one."""
    calc = CALC_BUGGY + "\n\ndef half(x: int) -> int:\n    return x // 2\n"
    tests = CALC_TEST + "\n\ndef test_half() -> None:\n    from calc import half\n\n"
    tests += "    assert half(4) == 2\n"
    root = make_repo({"calc.py": calc, "test_calc.py": tests})
    worse = "sed -i 's|x // 2|x // 3|' calc.py"
    done = greenloop(root, "run", "--agent", worse, "-y", "--", PY, "-m", "pytest", "-q")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "REGRESSION" in done.stdout
    assert "still failing: test_calc.py::test_double" in done.stdout
    assert "test_half" not in done.stdout.split("Last digest:")[0].split("REGRESSION")[1]
    assert "Your last edit was reverted: it made failures rise from 1 to 2." in done.stdout
    next_line = next(line for line in done.stdout.splitlines() if "next:" in line)
    kept = next(r for r in git_refs(root) if r.endswith("-iter-1"))
    assert f"git log {kept}" in next_line
    assert "x // 3" in git_show(root, f"{kept}:calc.py")


def git_refs(root: Path) -> list[str]:
    out = subprocess.run(
        ["git", "for-each-ref", "--format=%(refname)", "refs/greenloop"],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.split()


def git_show(root: Path, spec: str) -> str:
    out = subprocess.run(
        ["git", "show", spec], cwd=root, check=True, capture_output=True, text=True
    )
    return out.stdout

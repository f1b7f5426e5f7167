"""Walkthrough findings (docs/WALKTHROUGH-FINDINGS.md): what a newcomer met running greenloop on real
repositories, each pinned by a real greenloop process on a real git repo."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from limits import hang

PY = sys.executable

CALC_BUGGY = "def double(x: int) -> int:\n    return x * 3\n"
CALC_TEST = "from calc import double\n\n\ndef test_double() -> None:\n    assert double(2) == 4\n"
SCRIPT = CALC_TEST + "\n\ntest_double()\n"  # the test as a plain script: no pytest start-up


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
    fix = "perl -pi -e 's/x \\* 3/x * 2/' calc.py"
    done = greenloop(root, "run", "--agent", fix, "-y", "--subset", "off")
    assert "SUCCESS" in done.stdout, done.stdout + done.stderr
    assert "0 tests collected" not in done.stdout
    assert done.returncode == 0


def test_run_with_an_agent_that_edits_nothing_says_so_and_where_its_output_is(
    make_repo: Callable[..., Path],
) -> None:
    """A misconfigured agent (no write permission, wrong directory) exited 0 without an edit and
    the run said "the agent is stuck on a wrong hypothesis": it never had one."""
    root = make_repo({"calc.py": CALC_BUGGY, "test_calc.py": SCRIPT})
    done = greenloop(
        root, "run", "--agent", "echo looks fine to me", "-y", "--", PY, "-B", "test_calc.py"
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
    tests = (
        "import unittest\n\nfrom calc import double, half\n\n\n"
        "class TestCalc(unittest.TestCase):\n"
        "    def test_double(self) -> None:\n        self.assertEqual(double(2), 4)\n\n"
        "    def test_half(self) -> None:\n        self.assertEqual(half(4), 2)\n"
    )
    root = make_repo({"calc.py": calc, "test_calc.py": tests})
    worse = "perl -pi -e 's|x // 2|x // 3|' calc.py"
    done = greenloop(root, "run", "--agent", worse, "-y", "--", PY, "-B", "-m", "unittest")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "REGRESSION" in done.stdout
    assert "still failing: test_calc.TestCalc.test_double" in done.stdout
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


def git_show(root: Path, *spec: str) -> str:
    out = subprocess.run(
        ["git", "show", *spec], cwd=root, check=True, capture_output=True, text=True
    )
    return out.stdout


def test_run_hung_up_during_verification_names_the_step_and_keeps_the_committed_edit(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    """Stopped while the verifier checked iteration 1, the summary said "0/5 iterations" and
    "interrupted" with no word of the agent's committed edit or of what was running."""
    root = make_repo({"calc.py": CALC_BUGGY, "test_calc.py": SCRIPT})
    started = tmp_path / "verifying"
    verify = f"if [ -f fixed.txt ]; then touch {started}; sleep 120; fi; {PY} -B test_calc.py"
    agent = "perl -pi -e 's/x \\* 3/x * 2/' calc.py; echo yes > fixed.txt"
    initial = git_show(root, "--format=%H", "-s", "HEAD").strip()
    proc = subprocess.Popen(
        [PY, "-m", "greenloop", "run", "--agent", agent, "-y", "--", verify],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + hang(120)
    while not started.exists():
        assert time.monotonic() < deadline, "the verifier never started"
        assert proc.poll() is None, proc.communicate()[0]
        time.sleep(0.1)
    os.kill(proc.pid, signal.SIGHUP)
    output, _ = proc.communicate(timeout=hang(120))
    assert proc.returncode == 130, output
    assert "INTERRUPTED — interrupted during iter 1/5 · verify (SIGHUP)" in output
    assert git_show(root, "--format=%H", "-s", "HEAD").strip() == initial
    kept = next(r for r in git_refs(root) if r in output)
    assert "x * 2" in git_show(root, f"{kept}:calc.py")


def test_batch_with_an_unsolved_task_tells_where_to_read_why_and_that_command_works(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    """The batch summary said "stalled: the same failure twice" and stopped: no word of where the
    task's digest and kept attempt are (its run record, in its workspace). Resumed, its progress
    line counted "0 solved" beside a task an earlier run had solved."""
    make_repo({"calc.py": CALC_BUGGY, "test_calc.py": SCRIPT}, name="calc")
    verify = f"{PY} -B test_calc.py"
    fixed = {"id": "fixed", "repo": "calc", "agent": "perl -pi -e 's/x \\* 3/x * 2/' calc.py"}
    stuck = {"id": "stuck", "repo": "calc", "agent": "echo no idea"}
    tasks = tmp_path / "TASKS.jsonl"
    tasks.write_text(json.dumps(fixed | {"verifier": verify}) + "\n")
    out = tmp_path / "out"
    first = greenloop(tmp_path, "batch", "TASKS.jsonl", "--out", str(out), "--workers", "1")
    assert first.returncode == 0, first.stdout + first.stderr
    tasks.write_text(tasks.read_text() + json.dumps(stuck | {"verifier": verify}) + "\n")
    done = greenloop(tmp_path, "batch", "TASKS.jsonl", "--out", str(out), "--workers", "1")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "[2/2] stuck: stalled" in done.stderr
    assert "· 1 solved" in done.stderr
    nxt = next(line for line in done.stdout.splitlines() if line.startswith("  next:"))
    command = shlex.split(nxt.split(": ", 2)[2])
    assert command[:3] == ["greenloop", "-C", str(out / "work" / "stuck")]
    shown = greenloop(tmp_path, *command[1:])
    assert "STALLED — the agent changed no file" in shown.stdout, shown.stdout + shown.stderr
    assert "assert double(2) == 4" in shown.stdout


def test_run_whose_agent_makes_the_verifier_exit_0_says_why_green_is_untrusted(
    make_repo: Callable[..., Path],
) -> None:
    """An agent appended `|| true` inside the script the verifier runs: the run said only "the
    verifier's green can't be trusted after iteration 1" and "next: Green, but the suite was
    weakened: review each finding" with no finding listed."""
    root = make_repo(
        {"calc.py": CALC_BUGGY, "test_calc.py": CALC_TEST, "check.sh": f"{PY} -m pytest -q\n"}
    )
    cheat = "perl -pi -e 's/-q$/-q || true/' check.sh"
    done = greenloop(root, "run", "--agent", cheat, "-y", "--", "sh", "check.sh")
    assert done.returncode == 5, done.stdout + done.stderr
    assert (
        "can't be trusted after iteration 1: exit 0 but the output reports 1 failure(s)"
        in done.stdout
    )
    next_line = next(line for line in done.stdout.splitlines() if "next:" in line)
    assert "suite was weakened" not in next_line
    assert "the agent changed in the verifier's command or configuration" in next_line


def test_run_whose_verifier_times_out_says_timed_out_not_one_failing(
    make_repo: Callable[..., Path],
) -> None:
    """A hung verifier read "baseline · 1 failing (timeout)", "1 → 1 failing" and "failing:
    1 → 1": nothing failed, nothing was counted."""
    root = make_repo({"calc.py": CALC_BUGGY})
    done = greenloop(
        root, "run", "--agent", "echo x >> calc.py", "-y", "--timeout", "1", "--", "sleep 30"
    )
    assert done.returncode == 4, done.stdout + done.stderr
    progress = done.stderr
    assert "baseline · verify" in progress
    assert "· timed out · continue" in progress
    assert "· timed out → timed out" in progress
    assert "failing: timed out → timed out" in done.stdout
    assert "1 failing" not in progress + done.stdout


def test_run_whose_verifier_cannot_start_reads_as_an_environment_failure_in_whole_sentences(
    make_repo: Callable[..., Path],
) -> None:
    """A fresh clone without node_modules printed "iter 0 · environment failure …", "1 failing
    (env_failure)" and a reason cut mid-sentence: "… the agent was not asked to"."""
    root = make_repo({"calc.py": CALC_BUGGY})
    done = greenloop(root, "run", "--agent", "true", "-y", "--", "greenloop-no-such-tool")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "baseline · environment failure; re-running once" in done.stderr
    assert "iter 0" not in done.stderr
    assert (
        "ENV_FAILURE — an environment failure twice: not the code's fault, so the agent is not asked to fix it\n"
        in done.stdout
    )
    assert "failing: environment failure" in done.stdout
    assert "1 failing" not in done.stdout + done.stderr


def test_run_with_on_fail_keep_says_the_commits_stay_and_how_to_take_them_off(
    make_repo: Callable[..., Path],
) -> None:
    """With --on-fail keep a stalled run left its commits on the branch and said nothing of them."""
    root = make_repo({"calc.py": CALC_BUGGY, "test_calc.py": SCRIPT})
    initial = git_show(root, "--format=%H", "-s", "HEAD").strip()
    args = ("--agent", "echo '# looked' >> calc.py", "-y", "--on-fail", "keep")
    done = greenloop(root, "run", *args, "--", PY, "-B", "test_calc.py")
    assert done.returncode == 1, done.stdout + done.stderr
    next_line = next(line for line in done.stdout.splitlines() if "next:" in line)
    assert "The iteration commits stay on main (--on-fail keep)" in next_line
    command = next_line.split("; ")[-1].removesuffix(" takes them off.").split()
    assert command[:3] == ["git", "reset", "--keep"]
    subprocess.run(command, cwd=root, check=True, capture_output=True)
    assert git_show(root, "--format=%H", "-s", "HEAD").strip() == initial


def test_run_whose_agent_times_out_names_the_flag_that_gives_it_longer(
    make_repo: Callable[..., Path],
) -> None:
    root = make_repo({"calc.py": CALC_BUGGY, "test_calc.py": SCRIPT})
    args = ("--agent", "sleep 60", "-y", "--agent-timeout", "1")
    done = greenloop(root, "run", *args, "--", PY, "-B", "test_calc.py")
    assert done.returncode == 1, done.stdout + done.stderr
    assert (
        "AGENT_FAILURE — the agent timed out after 1 s (raise --agent-timeout if it needs longer)"
        in done.stdout
    )


def test_run_whose_tests_pass_but_never_exit_stops_untrusted_and_says_close_what_they_open(
    make_repo: Callable[..., Path],
) -> None:
    """mocha beside a server a test left open: the runner printed its failures, then hung. The run
    was TIMED OUT ("likely an infinite loop"), and after the agent's fix "timed out twice"."""
    leaves_a_thread = (
        "import threading\nimport time\n\nfrom calc import double\n\n\ndef test_double():\n"
        "    threading.Thread(target=time.sleep, args=(600,)).start()\n    assert double(2) == 4\n"
    )
    root = make_repo({"calc.py": CALC_BUGGY, "test_calc.py": leaves_a_thread})
    fix = "perl -pi -e 's/x \\* 3/x * 2/' calc.py"
    verify = f"{PY} -m pytest -q -p no:cacheprovider"
    # the limit must outlast pytest reporting on a loaded machine; the thread sleeps 600 s
    done = greenloop(
        root, "run", "--agent", fix, "-y", "--timeout", "30", "--", verify, timeout=hang(300)
    )
    assert done.returncode == 5, done.stdout + done.stderr
    assert "baseline · verify" in done.stderr
    assert "1 failing" in done.stderr  # the failure it reported before hanging counted
    assert "its process did not exit after the runner reported its results" in done.stdout
    next_line = next(line for line in done.stdout.splitlines() if "next:" in line)
    assert "close what they open" in next_line

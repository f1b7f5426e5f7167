"""Messages that match the situation (issue 13): real runs, real git repos, real processes."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from greenloop.agents.scripted import scripted
from greenloop.config import Config, StageSpec
from greenloop.loop.loop import run_loop
from greenloop.loop.policy import Result
from greenloop.report import render as report
from limits import hang

PY = sys.executable
CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a + b\n"
TESTS = (
    "from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_mul():\n    assert mul(2, 4) == 8\n"
)
FIX_ADD = {"replace": "calc.py", "old": "return a - b", "new": "return a + b"}
FIX_MUL = {
    "replace": "calc.py",
    "old": "def mul(a, b):\n    return a + b",
    "new": "def mul(a, b):\n    return a * b",
}
PYTEST = f"{PY} -m pytest -q -p no:cacheprovider"
VERIFIER = ("--", PY, "-m", "pytest", "-q", "-p", "no:cacheprovider")


def greenloop(*args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PY, "-m", "greenloop", *args],
        capture_output=True,
        text=True,
        timeout=hang(180),
        check=False,
        **kw,  # type: ignore[call-overload]
    )


def default_sigint() -> None:
    """Children we interrupt get Ctrl-C back even when the suite runs with SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def calc(make_repo: Callable[..., Path]) -> Path:
    return make_repo(
        {"calc.py": CALC, "test_calc.py": TESTS, ".gitignore": "__pycache__/\n.pytest_cache/\n"}
    )


def config(**kw: object) -> Config:
    stages = (StageSpec(name="test", run=PYTEST),)
    return Config(stages=stages, timeout=120.0, subset="off", **kw)  # type: ignore[arg-type]


def test_squash_keeps_every_iterations_subject_and_files(calc: Path) -> None:
    agent = scripted([[FIX_ADD, {"summary": "add adds"}], [FIX_MUL, {"summary": "mul multiplies"}]])
    result = run_loop(calc, agent, config=config(squash=True))
    assert result.result is Result.SUCCESS
    body = git(calc, "log", "-1", "--format=%B")
    assert "agent[iter 1/5]: add adds" in body
    assert "agent[iter 2/5]: mul multiplies" in body
    assert body.count("Files:\n  calc.py") == 2
    assert body.count("Greenloop-Run:") == 1


def test_every_prompt_repeats_the_task_rules_and_counts_read_in_the_singular(calc: Path) -> None:
    agent = scripted([[FIX_ADD], [FIX_MUL]])
    result = run_loop(calc, agent, config=config())
    record = Path(result.record_dir)
    for n in (1, 2):
        prompt = (record / f"iter-{n}" / "prompt.md").read_text()
        assert "do not edit, skip or delete tests" in prompt, n
    assert "1 still fails." in (record / "iter-2" / "prompt.md").read_text()
    assert result.reason == "green after 2 iterations"


def test_an_iteration_without_a_commit_shows_no_sha_and_one_iteration_is_singular(
    calc: Path,
) -> None:
    result = run_loop(calc, scripted([[], [FIX_ADD, FIX_MUL]]), config=config(max_iters=1))
    text = report.render_run_text(report.loop_json(result))
    row = next(line for line in text.splitlines() if line.startswith("  iter 1:"))
    assert "no commit" in row
    assert result.initial_sha[:10] not in row
    assert "(s)" not in text


def test_an_already_green_run_gives_no_advice_about_iteration_commits(
    make_repo: Callable[..., Path],
) -> None:
    root = make_repo({"test_ok.py": "def test_ok():\n    pass\n"})
    result = run_loop(root, scripted([]), config=config())
    assert result.result is Result.SUCCESS
    assert "iteration commits" not in result.recommendation
    assert "already green" in result.recommendation
    markdown = report.render_run_markdown(report.loop_json(result))
    assert "``" not in markdown  # the baseline row has no commit: no empty code span


def test_agent_failure_shows_its_output_and_where_the_rest_is(calc: Path) -> None:
    run = greenloop(
        "-C", str(calc), "run", "--agent", "echo working; echo boom >&2; exit 3", *VERIFIER
    )
    assert run.returncode == 1
    assert "agent failed: the agent exited 3" in run.stderr
    row = re.search(r"iter 1: agent failed \(exit 3\).*", run.stdout)
    assert row, run.stdout
    assert "0 failing" not in run.stdout
    assert "| boom" in run.stdout
    assert "| working" in run.stdout
    agent_txt = re.search(r"full output: (\S+agent\.txt)", run.stdout)
    assert agent_txt
    assert "boom" in Path(agent_txt[1]).read_text()
    shown = greenloop("-C", str(calc), "report")
    assert "| boom" in shown.stdout
    assert agent_txt[1] in shown.stdout


def test_declining_at_the_prompt_says_nothing_was_touched_and_exits_0(calc: Path) -> None:
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [PY, "-m", "greenloop", "-C", str(calc), "run", "--agent", "true", *VERIFIER],
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    os.close(follower)
    os.write(leader, b"n\n")
    _out, err = proc.communicate(timeout=hang(60))
    os.close(leader)
    assert proc.returncode == 0, err
    assert "not started, nothing touched" in err
    assert "interrupted" not in err


def start_run(root: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [PY, "-m", "greenloop", "-C", str(root), "run", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,  # noqa: PLW1509 (no threads here)
    )


def wait_for_file(path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"no {path}"
        time.sleep(0.1)


def test_runs_tells_a_killed_run_that_needs_recover_from_a_clean_ctrl_c(
    calc: Path, tmp_path: Path
) -> None:
    started = tmp_path / "baseline-started"
    slow = ["--agent", "true", "--", "sh", "-c", f"touch {started}; sleep 60"]
    proc = start_run(calc, *slow)
    wait_for_file(started)
    proc.send_signal(signal.SIGINT)  # during the baseline
    _out, err = proc.communicate(timeout=hang(60))
    assert proc.returncode == 130, err
    assert "-1/" not in _out
    assert "0/5 iterations" in _out
    proc = start_run(calc, "--agent", f"touch {started}-agent; sleep 60", *VERIFIER)
    wait_for_file(Path(f"{started}-agent"))
    proc.kill()
    proc.communicate(timeout=hang(60))
    rows = greenloop("-C", str(calc), "runs").stdout.splitlines()[1:]
    assert "KILLED: run greenloop recover" in rows[0]
    assert "interrupted" in rows[1]
    assert "recover" not in rows[1]
    greenloop("-C", str(calc), "recover")  # stops the killed run's agent: no process left behind


def test_check_calls_pytest_exit_5_no_tests_ran_and_a_timeout_by_its_limit(tmp_path: Path) -> None:
    (tmp_path / "test_none.py").write_text("x = 1\n")
    none = greenloop(
        "check", "--", PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=tmp_path
    )
    assert "NO TESTS RAN" in none.stdout
    assert "UNTRUSTED GREEN" not in none.stdout
    stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
    late = greenloop("check", "--timeout", "1", "--", PY, "-c", stubborn, cwd=tmp_path)
    assert late.returncode == 4
    assert "timed out after 1 s" in late.stdout, late.stdout


def test_check_names_the_files_a_fixer_stage_rewrote(make_repo: Callable[..., Path]) -> None:
    pyproject = f'[[tool.greenloop.stage]]\nname = "fmt"\nrun = "{PY} fix.py"\nfix = true\n'
    fix = "open('a.py', 'w').write('x = 1\\n')\n"
    root = make_repo({"a.py": "x=1\n", "fix.py": fix, "pyproject.toml": pyproject})
    out = greenloop("-C", str(root), "check")
    assert "the fixer rewrote: a.py" in out.stdout, out.stdout + out.stderr


def test_a_verifiers_by_products_are_named_by_check_and_by_the_dirty_tree_refusal(
    tmp_path: Path,
) -> None:
    if shutil.which("cargo") is None:
        pytest.fail("cargo is part of the test tools (.ci/run)")
    subprocess.run(["cargo", "new", "--lib", "--vcs", "git", "-q", "lib"], cwd=tmp_path, check=True)
    root = tmp_path / "lib"
    git(root, "add", "-A")
    git(root, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "new")
    checked = greenloop("-C", str(root), "check", "--", "cargo", "test", "-q", "--offline")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "the verifier created Cargo.lock" in checked.stderr
    refused = greenloop("-C", str(root), "run", "--agent", "true")
    assert refused.returncode == 2
    assert "?? Cargo.lock  (created by a verifier run)" in refused.stderr
    assert ".gitignore" in refused.stderr


def test_the_dirty_tree_refusal_shows_status_codes_as_git_status_short_does(calc: Path) -> None:
    (calc / "calc.py").write_text(CALC + "\n")  # unstaged: ` M`, not the staged `M ` (issue 37)
    (calc / "new.py").write_text("")
    (calc / "staged.py").write_text("")
    git(calc, "add", "staged.py")
    out = greenloop("-C", str(calc), "run", "--agent", "true").stderr
    listed = [line for line in out.splitlines() if line.endswith(".py")]
    assert listed == ["   M calc.py", "  ?? new.py", "  A  staged.py"]

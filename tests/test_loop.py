"""The real loop, end to end: scripted agent, real git repos, real pytest."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from greenloop.agents.command import CommandAgent
from greenloop.agents.scripted import scripted
from greenloop.batch.limiter import FileSlots, LimitedAgent
from greenloop.config import Config, StageSpec
from greenloop.errors import FatalError
from greenloop.loop.loop import LoopResult, run_loop
from greenloop.loop.policy import Result
from limits import hang

PY = sys.executable
CALC = """\
def add(a, b):
    return a - b


def sub(a, b):
    return a + b


def mul(a, b):
    return a + b


def div(a, b):
    return a * b
"""
TEST_CALC = """\
from calc import add, mul, sub


def test_add():
    assert add(2, 3) == 5


def test_sub():
    assert sub(5, 3) == 2


def test_mul():
    assert mul(2, 4) == 8


def test_identity():
    assert add(0, 0) == 0
"""
TEST_DIV = """\
from calc import div


def test_div():
    assert div(6, 3) == 2
"""
GITIGNORE = "__pycache__/\n.pytest_cache/\n"
FIX_ADD = {"replace": "calc.py", "old": "return a - b", "new": "return a + b"}
FIX_SUB = {
    "replace": "calc.py",
    "old": "def sub(a, b):\n    return a + b",
    "new": "def sub(a, b):\n    return a - b",
}
FIX_MUL = {
    "replace": "calc.py",
    "old": "def mul(a, b):\n    return a + b",
    "new": "def mul(a, b):\n    return a * b",
}
FIX_DIV = {
    "replace": "calc.py",
    "old": "def div(a, b):\n    return a * b",
    "new": "def div(a, b):\n    return a / b",
}
STAGE = (StageSpec(name="test", run=f"{PY} -m pytest -q -p no:cacheprovider"),)


def config(**kw: Any) -> Config:
    kw.setdefault("stages", STAGE)
    kw.setdefault("timeout", 60.0)
    return Config(**kw)


@pytest.fixture
def calc_repo(make_repo: Callable[..., Path]) -> Path:
    return make_repo(
        {
            "calc.py": CALC,
            "test_calc.py": TEST_CALC,
            "test_div.py": TEST_DIV,
            ".gitignore": GITIGNORE,
        }
    )


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout.strip()


def loop(root: Path, steps: Sequence[Sequence[dict[str, Any]]], **kw: Any) -> LoopResult:
    return run_loop(root, scripted(steps), config=config(**kw))


def failing_counts(result: LoopResult) -> list[int]:
    return [row.failures + row.errors for row in result.history]


def test_success_in_two_iterations_counts_four_one_zero_with_two_commits(calc_repo: Path) -> None:
    initial = git(calc_repo, "rev-parse", "HEAD")
    result = loop(
        calc_repo, [[FIX_ADD, FIX_SUB, FIX_MUL, {"summary": "fix add, sub and mul"}], [FIX_DIV]]
    )
    assert result.result is Result.SUCCESS
    assert failing_counts(result) == [4, 1, 0]
    subjects = git(calc_repo, "log", "--format=%s", f"{initial}..HEAD").splitlines()
    assert subjects == ["agent[iter 2/5]: edit calc.py", "agent[iter 1/5]: fix add, sub and mul"]
    assert "Greenloop-Run: " + result.run_id in git(calc_repo, "log", "-1", "--format=%B")
    assert git(calc_repo, "status", "--porcelain") == ""


def test_already_green_repo_never_calls_the_agent(make_repo: Callable[..., Path]) -> None:
    root = make_repo(
        {
            "calc.py": "def add(a, b):\n    return a + b\n",
            "test_calc.py": "from calc import add\n\ndef test_add():\n    assert add(1, 1) == 2\n",
            ".gitignore": GITIGNORE,
        }
    )
    result = loop(root, [[{"fail": 9}]])
    assert result.result is Result.SUCCESS
    assert result.iterations == 0
    assert "nothing to fix" in result.reason


def test_same_failures_twice_in_a_row_stop_as_stalled_after_the_first_edits_one_more_try(
    calc_repo: Path,
) -> None:
    think = {"replace": "calc.py", "old": "def add", "new": "# thinking\ndef add"}
    again = {"replace": "calc.py", "old": "# thinking", "new": "# thinking again"}
    result = loop(calc_repo, [[think], [again]])
    assert result.result is Result.STALLED
    assert result.iterations == 2  # the first edit explores: the README's one more try (issue 26)
    assert result.reason.startswith("the same failure twice in a row")
    digest = (Path(result.record_dir) / "iter-1" / "digest.md").read_text()
    assert "it was there before the first edit, and the last edit did not change it" in digest
    assert "earlier attempts changed no files" not in digest


def test_going_back_to_earlier_failures_stops_as_circular(calc_repo: Path) -> None:
    step_b = {
        "replace": "calc.py",
        "old": "def sub(a, b):\n    return a + b",
        "new": "def sub(a, b):\n    return a + b + 1",
    }
    step_a = {"replace": "calc.py", "old": "return a + b + 1", "new": "return a + b"}
    result = loop(calc_repo, [[step_b], [step_a]])
    assert result.result is Result.CIRCULAR
    assert "iteration 0" in result.reason


def test_rising_failures_roll_back_and_keep_the_attempt_reachable(calc_repo: Path) -> None:
    initial = git(calc_repo, "rev-parse", "HEAD")
    break_more = {"replace": "calc.py", "old": "return a - b", "new": "return a - b - 1"}
    result = loop(calc_repo, [[break_more]], subset="off")  # rollback as judged on full runs
    assert result.result is Result.REGRESSION
    assert failing_counts(result) == [4, 5]
    assert git(calc_repo, "rev-parse", "HEAD") == initial
    kept = git(calc_repo, "for-each-ref", "--format=%(refname)", "refs/greenloop/")
    assert f"refs/greenloop/{result.run_id}-iter-1" in kept
    assert "a - b - 1" in git(calc_repo, "show", f"refs/greenloop/{result.run_id}-iter-1:calc.py")
    assert result.exit_code == 1


def test_regression_with_continue_tells_the_agent_its_edit_was_reverted(calc_repo: Path) -> None:
    break_more = {"replace": "calc.py", "old": "return a - b", "new": "return a - b - 1"}
    result = run_loop(
        calc_repo,
        scripted([[break_more], [FIX_ADD, FIX_SUB, FIX_MUL, FIX_DIV]]),
        config=config(on_regression="continue", subset="off"),
    )
    assert result.result is Result.SUCCESS
    prompt = (Path(result.record_dir) / "iter-2" / "prompt.md").read_text()
    assert "Your last edit was reverted" in prompt
    assert "a - b - 1" not in (calc_repo / "calc.py").read_text()


def test_loop_prompt_repeats_the_task_on_iteration_2_when_a_wrapped_agent_starts_afresh(
    calc_repo: Path, tmp_path: Path
) -> None:
    """A batch wraps the agent (LimitedAgent): the wrapper says what the agent itself says."""
    fix_add = tmp_path / "fix_add.py"
    fix_add.write_text(
        "from pathlib import Path\n\np = Path('calc.py')\n"
        "p.write_text(p.read_text().replace('return a - b', 'return a + b', 1))\n"
    )
    inner = CommandAgent(command=f"{PY} {fix_add}", continues=False)  # like the cline preset
    agent = LimitedAgent(inner=inner, slots=FileSlots(directory=str(tmp_path / "slots"), count=1))
    task = "Make every test in test_calc.py pass."
    result = run_loop(calc_repo, agent, config=config(task=task, max_iters=2, subset="off"))
    second = (Path(result.record_dir) / "iter-2" / "prompt.md").read_text()
    assert task in second
    assert "test_calc.py::test_sub" in second  # and the digest of what still fails


def test_failure_count_not_falling_stops_as_non_convergence(calc_repo: Path) -> None:
    mul1 = {
        "replace": "calc.py",
        "old": "def mul(a, b):\n    return a + b",
        "new": "def mul(a, b):\n    return a + b + 1",
    }
    mul2 = {"replace": "calc.py", "old": "return a + b + 1", "new": "return a + b + 3"}
    result = loop(calc_repo, [[FIX_ADD], [mul1], [mul2]])
    assert result.result is Result.NON_CONVERGENCE
    assert failing_counts(result) == [4, 3, 3, 3]


def test_iteration_cap_reverts_the_branch_and_keeps_the_attempt(calc_repo: Path) -> None:
    initial = git(calc_repo, "rev-parse", "HEAD")
    result = loop(calc_repo, [[FIX_ADD], [FIX_SUB]], max_iters=2)
    assert result.result is Result.EXHAUSTED
    assert git(calc_repo, "rev-parse", "HEAD") == initial
    assert git(calc_repo, "status", "--porcelain") == ""
    assert result.attempt_ref == f"refs/greenloop/{result.run_id}"
    log = git(calc_repo, "log", "--format=%s", result.attempt_ref).splitlines()
    assert log[:2] == ["agent[iter 2/2]: edit calc.py", "agent[iter 1/2]: edit calc.py"]


def test_keep_on_fail_leaves_the_iteration_commits_on_the_branch(calc_repo: Path) -> None:
    initial = git(calc_repo, "rev-parse", "HEAD")
    result = loop(calc_repo, [[FIX_ADD], [FIX_SUB]], max_iters=2, on_fail="keep")
    assert result.result is Result.EXHAUSTED
    assert git(calc_repo, "rev-list", "--count", f"{initial}..HEAD") == "2"


def test_green_by_adding_a_skip_is_a_suspicious_pass(calc_repo: Path) -> None:
    skip = {
        "replace": "test_div.py",
        "old": "def test_div",
        "new": "import pytest\n\n\n@pytest.mark.skip\ndef test_div",
    }
    result = loop(calc_repo, [[FIX_ADD, FIX_SUB, FIX_MUL, skip]])
    assert result.result is Result.SUSPICIOUS_PASS
    kinds = {f.kind for f in result.suspicious}
    assert "skip_added" in kinds
    assert "test_modified" in kinds
    assert any(f.file == "test_div.py" and f.line for f in result.suspicious)
    assert result.exit_code == 5


def test_green_by_deleting_a_test_file_is_a_suspicious_pass(calc_repo: Path) -> None:
    result = loop(calc_repo, [[FIX_ADD, FIX_SUB, FIX_MUL, {"delete": "test_div.py"}]])
    assert result.result is Result.SUSPICIOUS_PASS
    kinds = {f.kind for f in result.suspicious}
    assert {"test_deleted", "fewer_tests"} <= kinds


def test_green_by_weakening_an_assert_is_a_suspicious_pass(calc_repo: Path) -> None:
    weaken = {"replace": "test_div.py", "old": "assert div(6, 3) == 2", "new": "assert div(6, 3)"}
    result = loop(calc_repo, [[FIX_ADD, FIX_SUB, FIX_MUL, weaken]])
    assert result.result is Result.SUSPICIOUS_PASS
    assert {"assert_removed", "test_modified"} <= {f.kind for f in result.suspicious}


def test_agent_commits_of_its_own_are_kept_and_recorded(calc_repo: Path) -> None:
    result = loop(
        calc_repo, [[FIX_ADD, FIX_SUB, FIX_MUL, FIX_DIV, {"commit": "agent: fix everything"}]]
    )
    assert result.result is Result.SUCCESS
    row = result.history[1]
    assert len(row.agent_commits) == 1
    assert git(calc_repo, "log", "-1", "--format=%s") == "agent: fix everything"
    assert row.files_changed == ("calc.py",)


def test_verifier_timing_out_twice_stops_as_timeout(make_repo: Callable[..., Path]) -> None:
    hang = "def add(a, b):\n    while True:\n        pass\n"
    root = make_repo(
        {
            "calc.py": hang,
            "test_calc.py": "from calc import add\n\ndef test_add():\n    assert add(1, 1) == 2\n",
            ".gitignore": GITIGNORE,
        }
    )
    nudge = {"replace": "calc.py", "old": "def add", "new": "# still looping\ndef add"}
    result = loop(root, [[nudge]], timeout=3.0)
    assert result.result is Result.TIMEOUT
    assert [row.verdict for row in result.history] == ["timeout", "timeout"]
    prompt = (Path(result.record_dir) / "iter-1" / "prompt.md").read_text()
    assert "timed out" in prompt
    assert result.exit_code == 4


def test_environment_failure_never_calls_the_agent(make_repo: Callable[..., Path]) -> None:
    root = make_repo(
        {
            "test_db.py": "import psycopg2_missing_here\n\ndef test_db():\n    assert psycopg2_missing_here\n",
            ".gitignore": GITIGNORE,
        }
    )
    result = loop(root, [[{"fail": 9}]])
    assert result.result is Result.ENV_FAILURE
    assert result.iterations == 0
    assert result.exit_code == 3
    assert "psycopg2_missing_here" in result.last_digest


def test_killed_suite_is_rerun_once_then_unresolved(calc_repo: Path) -> None:
    killer = (StageSpec(name="test", run=f"{PY} -c 'import os; os.kill(os.getpid(), 9)'"),)
    result = run_loop(calc_repo, scripted([[FIX_ADD]]), config=config(stages=killer))
    assert result.result is Result.UNRESOLVED
    assert result.iterations == 0
    assert result.exit_code == 4


def test_dirty_tree_is_refused_and_the_file_is_left_intact(calc_repo: Path) -> None:
    (calc_repo / "calc.py").write_text(CALC + "# my uncommitted work\n")
    with pytest.raises(FatalError, match="commit or stash"):
        loop(calc_repo, [[FIX_ADD]])
    assert (calc_repo / "calc.py").read_text().endswith("# my uncommitted work\n")
    assert git(calc_repo, "status", "--porcelain") == "M calc.py"


def test_agent_exiting_non_zero_is_an_agent_failure(calc_repo: Path) -> None:
    result = loop(calc_repo, [[{"fail": 3}]])
    assert result.result is Result.AGENT_FAILURE
    assert result.exit_code == 1


def _cli_run(root: Path, steps: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            PY,
            "-m",
            "greenloop",
            "-C",
            str(root),
            "run",
            "--agent",
            f"scripted:{steps}",
            "--format",
            "json",
            *extra,
            "--",
            f"{PY} -m pytest -q -p no:cacheprovider",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )


def _wait_for(path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.1)


def test_cli_run_prints_the_json_report_and_exits_with_the_result_code(
    calc_repo: Path, tmp_path: Path
) -> None:
    steps = tmp_path / "steps.json"
    steps.write_text(json.dumps([[FIX_ADD, FIX_SUB, FIX_MUL, FIX_DIV]]))
    proc = _cli_run(calc_repo, steps)
    out, err = proc.communicate(timeout=hang(120))
    assert proc.returncode == 0, err
    data = json.loads(out)
    assert data["result"] == "success"
    assert [h["iteration"] for h in data["history"]] == [0, 1]
    assert "iter 1/5" in err
    shown = subprocess.run(
        [PY, "-m", "greenloop", "-C", str(calc_repo), "report", "last", "--format", "md"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "greenloop: success" in shown.stdout


def test_ctrl_c_mid_agent_stops_as_interrupted_with_nothing_lost(
    calc_repo: Path, tmp_path: Path, probe: str
) -> None:
    initial = git(calc_repo, "rev-parse", "HEAD")
    steps = tmp_path / "steps.json"
    steps.write_text(json.dumps([[FIX_ADD, {"write": "started.txt", "text": "x"}, {"sleep": 60}]]))
    proc = _cli_run(calc_repo, steps)
    _wait_for(calc_repo / "started.txt")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=hang(60))
    assert proc.returncode == 130, err
    assert json.loads(out)["result"] == "interrupted"
    assert json.loads(out)["reason"].endswith("(Ctrl-C)")  # which stop: SIGTERM, SIGHUP say so
    assert git(calc_repo, "rev-parse", "HEAD") == initial
    ref = json.loads(out)["attempt_ref"]
    assert "return a + b" in git(calc_repo, "show", f"{ref}:calc.py")


def test_kill_9_mid_agent_then_recover_restores_the_branch_and_keeps_the_work(
    calc_repo: Path, tmp_path: Path, probe: str
) -> None:
    initial = git(calc_repo, "rev-parse", "HEAD")
    steps = tmp_path / "steps.json"
    steps.write_text(json.dumps([[FIX_ADD, {"write": "started.txt", "text": "x"}, {"sleep": 60}]]))
    proc = _cli_run(calc_repo, steps)
    _wait_for(calc_repo / "started.txt")
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=hang(30))
    again = subprocess.run(
        [PY, "-m", "greenloop", "-C", str(calc_repo), "run", "--agent", "true"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert again.returncode == 2
    assert "recover" in again.stderr
    rec = subprocess.run(
        [PY, "-m", "greenloop", "-C", str(calc_repo), "recover"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert rec.returncode == 0, rec.stderr
    assert git(calc_repo, "rev-parse", "HEAD") == initial
    assert git(calc_repo, "status", "--porcelain") == ""
    refs = git(calc_repo, "for-each-ref", "--format=%(refname)", "refs/greenloop/").splitlines()
    assert refs
    assert "return a + b" in git(calc_repo, "show", f"{refs[0]}:calc.py")
    assert git(calc_repo, "show", f"{refs[0]}:started.txt") == "x"


def test_verifier_by_products_stay_out_of_the_agents_commit(make_repo: Callable[..., Path]) -> None:
    # no .gitignore: the verifier leaves an untracked report file behind before the agent runs
    stage = (
        StageSpec(name="test", run=f"{PY} -m pytest -q -p no:cacheprovider --junitxml=report.xml"),
    )
    root = make_repo({"calc.py": CALC, "test_calc.py": TEST_CALC, "test_div.py": TEST_DIV})
    result = run_loop(
        root, scripted([[FIX_ADD, FIX_SUB, FIX_MUL, FIX_DIV]]), config=config(stages=stage)
    )
    assert result.result is Result.SUCCESS
    assert result.history[1].files_changed == ("calc.py",)
    assert "report.xml" not in git(root, "show", "--name-only", "--format=", "HEAD")


def test_on_a_terminal_the_plan_is_shown_and_declining_touches_nothing(
    calc_repo: Path, tmp_path: Path
) -> None:
    import pty

    steps = tmp_path / "steps.json"
    steps.write_text(json.dumps([[FIX_ADD]]))
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [
            PY,
            "-m",
            "greenloop",
            "-C",
            str(calc_repo),
            "run",
            "--agent",
            f"scripted:{steps}",
            "--",
            PY,
            "-m",
            "pytest",
            "-q",
        ],
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
    assert "at most 5 iterations" in err
    assert "agent: scripted" in err
    assert not (calc_repo / ".git" / "greenloop" / "runs").exists() or not any(
        (calc_repo / ".git" / "greenloop" / "runs").iterdir()
    )
    assert git(calc_repo, "status", "--porcelain") == ""
    assert (calc_repo / "calc.py").read_text() == CALC


def test_without_a_terminal_the_run_never_asks(calc_repo: Path, tmp_path: Path) -> None:
    steps = tmp_path / "steps.json"
    steps.write_text(json.dumps([[FIX_ADD, FIX_SUB, FIX_MUL, FIX_DIV]]))
    proc = _cli_run(calc_repo, steps)
    _out, err = proc.communicate(timeout=hang(120))
    assert proc.returncode == 0, err
    assert "Start?" not in err

"""Tried as a new user would (issue 26): what a first day with greenloop runs into, as real processes."""

from __future__ import annotations

import json
import os
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
from greenloop.report import render as report
from limits import hang

PY = sys.executable
CALC = "def add(a, b):\n    return a - b\n"
TESTS = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
GITIGNORE = "__pycache__/\n.pytest_cache/\n"
PYTEST = f"{PY} -m pytest -q -p no:cacheprovider"


def greenloop(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PY, "-m", "greenloop", "-C", str(root), *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=hang(180),
        check=False,
    )


def git(root: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True)
    return out.stdout.strip()


def wait_for(path: Path, timeout: float = 90) -> None:
    deadline = time.monotonic() + hang(timeout)
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.1)


@pytest.fixture
def calc(make_repo: Callable[..., Path]) -> Path:
    return make_repo({"calc.py": CALC, "test_calc.py": TESTS, ".gitignore": GITIGNORE})


@pytest.mark.parametrize("args", [["runs"], ["--version"], ["--help"], ["runs", "--help"]])
def test_every_command_exits_141_quietly_when_its_reader_has_closed_the_pipe(
    tmp_path: Path, args: list[str]
) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    proc = subprocess.Popen(
        [PY, "-m", "greenloop", *args],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    proc.stdout.close()  # the reader is gone before greenloop writes its first byte
    err = proc.stderr.read().decode()
    assert (
        proc.wait(timeout=hang(120)) == 141
    )  # 128 + SIGPIPE, as the shell reports `git log | head`
    assert err == ""  # no "internal error", no traceback, no crash log


def test_runs_piped_into_a_head_that_reads_nothing_says_nothing_on_stderr(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    proc = subprocess.run(
        f"{PY} -m greenloop runs | head -c 0; echo $? ${{PIPESTATUS[0]}}",
        shell=True,
        executable="/bin/bash",
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=hang(120),
        check=False,
    )
    assert proc.stderr == ""
    assert proc.stdout.split()[1] in ("0", "141")  # 0 only when it wrote before head was gone


def test_a_run_killed_with_kill_9_and_recovered_is_reported_killed_with_its_attempt_ref(
    calc: Path, tmp_path: Path
) -> None:
    steps = tmp_path / "steps.json"
    fix = {"replace": "calc.py", "old": "return a - b", "new": "return a + b"}
    steps.write_text(json.dumps([[fix, {"write": "started.txt", "text": "x"}, {"sleep": 60}]]))
    argv = [PY, "-m", "greenloop", "-C", str(calc), "run", "--agent", f"scripted:{steps}"]
    proc = subprocess.Popen(
        [*argv, "--", PYTEST],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    wait_for(calc / "started.txt")
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=hang(60))
    assert greenloop(calc, "recover").returncode == 0
    ref = git(calc, "for-each-ref", "--format=%(refname)", "refs/greenloop/")
    assert "return a + b" in git(calc, "show", f"{ref}:calc.py")
    assert "killed (recovered)" in greenloop(calc, "runs").stdout
    text = greenloop(calc, "report", "last").stdout
    assert "in progress" not in text
    assert "nothing was lost" not in text
    assert "killed during iteration 1's agent call" in text
    assert "greenloop recover restored main" in text
    assert f"attempt kept at {ref}" in text
    assert f"{ref} | git apply" in text  # how to get the work back
    assert "2 changed file(s): calc.py, started.txt" in text
    data = json.loads(greenloop(calc, "report", "last", "--format", "json").stdout)
    assert data["attempt_ref"] == ref
    assert data["recovered"]["attempt_ref"] == ref
    assert data["final_sha"] == git(calc, "rev-parse", "HEAD")  # the branch is back


def test_a_run_killed_in_its_baseline_before_any_report_is_reported_killed_after_recover(
    calc: Path, tmp_path: Path
) -> None:
    started = tmp_path / "baseline-started"
    argv = [PY, "-m", "greenloop", "-C", str(calc), "run", "--agent", "true"]
    proc = subprocess.Popen(
        [*argv, "--", "sh", "-c", f"touch {started}; sleep 60"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    wait_for(started)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=hang(60))
    assert greenloop(calc, "recover").returncode == 0
    shown = greenloop(calc, "report", "last")
    assert shown.returncode == 0, shown.stderr
    assert "killed during the baseline" in shown.stdout
    assert "It had changed no file: nothing to bring back" in shown.stdout
    assert "killed (recovered)" in greenloop(calc, "runs").stdout


def test_an_untracked_venv_is_one_line_with_gitignore_advice_not_commit_or_stash(
    calc: Path,
) -> None:
    subprocess.run([PY, "-m", "venv", "--without-pip", str(calc / ".venv")], check=True)
    for i in range(40):  # a venv's site-packages: hundreds of files that are not work
        (calc / ".venv" / f"lib-{i}.py").write_text("")
    (calc / "py-env").mkdir()  # named anything: its pyvenv.cfg says what it is
    (calc / "py-env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    refused = greenloop(calc, "run", "--agent", "true", "--", "true")
    assert refused.returncode == 2
    listed = [line for line in refused.stderr.splitlines() if line.startswith("  ??")]
    assert listed[0].startswith("  ?? .venv/  (a Python virtual environment, 4")
    assert listed[1] == "  ?? py-env/  (a Python virtual environment, 1 file)"
    assert len(listed) == 2  # not the venv's files one by one
    assert "commit or stash" not in refused.stderr
    assert "printf '%s\\n' .venv/ py-env/ >> .git/info/exclude" in refused.stderr
    (calc / "py-env" / "pyvenv.cfg").unlink()
    (calc / "py-env").rmdir()
    (calc / "notes.txt").write_text("mine\n")
    refused = greenloop(calc, "run", "--agent", "true", "--", "true")
    assert "echo .venv/ >> .git/info/exclude" in refused.stderr
    assert "the rest: commit or stash them first" in refused.stderr  # notes.txt is work
    (calc / "notes.txt").unlink()
    with (calc / ".git" / "info" / "exclude").open("a") as exclude:
        exclude.write(".venv/\n")  # the advice, followed
    started = greenloop(calc, "run", "--agent", "true", "--", "true")
    assert started.returncode == 0, started.stderr  # already green: nothing to fix


def test_a_runner_that_crashes_before_any_test_ran_is_crashed_not_one_failing(
    make_repo: Callable[..., Path],
) -> None:
    two = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a + b\n"
    tests = (
        "from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_mul():\n    assert mul(2, 4) == 8\n"
    )
    root = make_repo({"calc.py": two, "test_calc.py": tests, ".gitignore": GITIGNORE})
    crash = {
        "replace": "calc.py",
        "old": "def add",
        "new": 'raise RuntimeError("half-written")\n\n\ndef add',
    }
    fixed = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
    fix = [{"write": "calc.py", "text": fixed}]
    stages = (StageSpec(name="test", run=PYTEST),)
    config = Config(stages=stages, timeout=120.0, subset="off", max_iters=3)
    lines: list[str] = []
    result = run_loop(root, scripted([[crash], fix]), config=config, progress=lines.append)
    crashed = result.history[1]
    assert crashed.verdict == "crashed"
    assert lines[-2].endswith("2 → crashed")  # the progress line said "2 → 1 failing"
    digest = (Path(result.record_dir) / "iter-1" / "digest.md").read_text()
    assert "PROGRESS: none: the run stopped before any test ran" in digest
    assert "2 previously failing tests did not run" in digest
    assert "previously failing now pass" not in digest
    text = report.render_run(report.loop_json(result), "text")
    assert "iter 1: crashed, agent" in text
    assert "failing: 2 → crashed → green" in text


def test_a_stage_with_command_instead_of_run_gets_one_error_that_names_run(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    stage = '[[tool.greenloop.stage]]\nname = "test"\ncommand = "pytest -x"\n'
    (tmp_path / "pyproject.toml").write_text(stage)
    out = greenloop(tmp_path, "check")
    assert out.returncode == 2
    problems = [line for line in out.stderr.splitlines() if line.startswith("  ")]
    assert problems == [
        "  pyproject.toml [tool.greenloop]: stage[0].command: unknown key (did you mean 'run'?)"
    ]


def test_a_bad_flag_value_is_named_by_its_flag_not_its_config_key(calc: Path) -> None:
    out = greenloop(calc, "run", "--max-iters", "0", "--agent", "true", "--", "true")
    assert out.returncode == 2
    assert "--max-iters: expected a positive whole number, got 0" in out.stderr
    assert "max_iters" not in out.stderr
    assert "invalid configuration" not in out.stderr  # no file is wrong


@pytest.mark.parametrize(
    ("where", "said"),
    [
        ("flag", "set by --timeout"),
        ("file", "set by timeout in pyproject.toml [tool.greenloop]"),
        ("stage", "set by stage test's timeout in pyproject.toml [tool.greenloop]"),
    ],
)
def test_a_timeout_the_user_set_is_told_as_their_limit_and_where_it_was_set(
    tmp_path: Path, where: str, said: str
) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    args = ["check", "--", "sleep", "30"]
    if where == "flag":
        args = ["check", "--timeout", "1", "--", "sleep", "30"]
    elif where == "file":
        (tmp_path / "pyproject.toml").write_text("[tool.greenloop]\ntimeout = 1\n")
    else:
        stage = '[[tool.greenloop.stage]]\nname = "test"\nrun = "sleep 30"\ntimeout = 1\n'
        (tmp_path / "pyproject.toml").write_text(stage)
        args = ["check"]
    out = greenloop(tmp_path, *args)
    assert out.returncode == 4
    assert f"timed out after 1 s, the limit {said}" in out.stdout
    assert "infinite loop" not in out.stdout


def test_the_default_timeout_still_reads_as_a_likely_hang(tmp_path: Path) -> None:
    from greenloop.config import Config
    from greenloop.detect.sources import detect_cascade

    cascade = detect_cascade(tmp_path, Config(), ["sleep", "1"])
    assert cascade is not None
    assert cascade.stages[0].timeout_origin == ""  # greenloop's own 600 s: no one chose it


@pytest.mark.parametrize(
    ("agent", "said"),
    [
        ("./no-such-agent.sh", "./no-such-agent.sh does not exist"),
        ("./plain.txt --go", "./plain.txt is not executable: chmod +x ./plain.txt"),
    ],
)
def test_an_agent_path_that_cannot_run_is_told_as_a_path_not_as_path_lookup(
    calc: Path, agent: str, said: str
) -> None:
    (calc / ".git" / "info" / "exclude").write_text("plain.txt\n")
    (calc / "plain.txt").write_text("echo hi\n")
    out = subprocess.run(
        [PY, "-m", "greenloop", "run", "--agent", agent, "--", "true"],
        cwd=calc,
        capture_output=True,
        text=True,
        timeout=hang(120),
        check=False,
    )
    assert out.returncode == 2
    assert said in out.stderr
    assert "PATH" not in out.stderr


def test_dash_c_and_dash_v_after_the_subcommand_mean_what_they_mean_before_it(
    calc: Path, tmp_path: Path
) -> None:
    after = subprocess.run(
        [PY, "-m", "greenloop", "check", "-C", str(calc), "-v", "--", "true"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=hang(120),
        check=False,
    )
    assert after.returncode == 0, after.stderr
    assert "greenloop: stage verify: true ->" in after.stderr  # -v's diagnostics
    runs = subprocess.run(
        [PY, "-m", "greenloop", "-C", "/nonexistent", "runs", "-C", str(calc)],
        capture_output=True,
        text=True,
        timeout=hang(120),
        check=False,
    )
    assert runs.returncode == 0, runs.stderr  # the one after the command wins, as the last flag

"""Tried as a new user would, round four (issue 37): the small things a first day runs into."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from limits import hang

PY = sys.executable


def greenloop(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PY, "-m", "greenloop", "-C", str(root), *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=hang(180),
        check=False,
    )


def git_repo(root: Path) -> Path:
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


def test_a_near_miss_of_a_preset_name_is_answered_with_did_you_mean(tmp_path: Path) -> None:
    out = greenloop(git_repo(tmp_path), "run", "--agent", "claud", "--", "true")
    assert out.returncode == 2
    assert "Did you mean the preset 'claude'?" in out.stderr


def test_a_command_far_from_every_preset_gets_no_did_you_mean(tmp_path: Path) -> None:
    out = greenloop(git_repo(tmp_path), "run", "--agent", "zzqx-agent", "--", "true")
    assert out.returncode == 2
    assert "Did you mean" not in out.stderr


def test_a_negative_timeout_flag_is_echoed_as_the_user_typed_it(tmp_path: Path) -> None:
    out = greenloop(git_repo(tmp_path), "check", "--timeout", "-1", "--", "true")
    assert out.returncode == 2
    assert "--timeout: expected a positive number of seconds, got -1\n" in out.stderr
    assert "-1.0" not in out.stderr


def test_a_stage_without_run_says_run_is_missing_not_got_none(tmp_path: Path) -> None:
    (git_repo(tmp_path) / "greenloop.toml").write_text('[[stage]]\nname = "test"\n')
    out = greenloop(tmp_path, "check")
    assert out.returncode == 2
    assert "stage[0].run: missing (every stage needs a run)" in out.stderr
    assert "None" not in out.stderr


def test_a_stage_with_an_empty_run_still_shows_the_empty_value(tmp_path: Path) -> None:
    (git_repo(tmp_path) / "greenloop.toml").write_text('[[stage]]\nname = "test"\nrun = ""\n')
    out = greenloop(tmp_path, "check")
    assert out.returncode == 2
    assert "stage[0].run: expected a non-empty string, got ''" in out.stderr


def test_the_demos_clocks_bound_a_hang_not_a_busy_machine() -> None:
    from greenloop.demo.run import demo_config

    config = demo_config()
    # bench/demo.py measured 62.6 s of wall for ~13 s of CPU at load 14; the old 120 s cap was
    # within 2x of that, so a user's demo on a busy machine could end as a timeout
    assert config.max_time is not None
    assert config.max_time >= 600
    assert config.timeout >= 300
    assert config.agent_timeout is not None
    assert config.agent_timeout >= 300


def test_an_untracked_egg_info_is_told_as_build_metadata_to_keep_out(tmp_path: Path) -> None:
    root = git_repo(tmp_path)
    (root / "calc.py").write_text("x = 1\n")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(
        ["git", "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "c"],
        cwd=root,
        check=True,
    )
    (root / "calc.egg-info").mkdir()
    (root / "calc.egg-info" / "PKG-INFO").write_text("Name: calc\n")
    out = greenloop(root, "run", "--agent", "true", "--", "true")
    assert out.returncode == 2
    assert "?? calc.egg-info/  (a package's build metadata (pip install -e), 1 file)" in out.stderr
    assert "calc.egg-info/ is an environment, not work to commit" in out.stderr


def test_ctrl_c_under_tee_keeps_the_report_on_stderr_and_exits_130(tmp_path: Path) -> None:
    import os
    import signal
    import time

    root = tmp_path / "repo"
    root.mkdir()
    git_repo(root)
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "test_calc.py").write_text(
        "import unittest\n\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n"
    )
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(
        ["git", "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "c"],
        cwd=root,
        check=True,
    )
    started = tmp_path / "started"
    agent = f"touch {started}; sleep 60"
    run = (
        f"{{ {PY} -m greenloop -C {root} run -y --agent '{agent}' -- {PY} -m unittest -q; "
        f"echo $? > {tmp_path / 'rc'}; }} | tee {tmp_path / 'tee.out'}"
    )
    # a shell of its own process group, as a terminal's foreground job is: Ctrl-C reaches all
    proc = subprocess.Popen(
        ["bash", "-c", run],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + hang(600)  # a hang guard: the baseline runs first
    while not started.exists():
        assert time.monotonic() < deadline, "the agent never started"
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C does: every process of the foreground job
    _out, err = proc.communicate(timeout=hang(600))
    assert (tmp_path / "rc").read_text().strip() == "130", err
    assert "stdout's reader was stopped too; the report:" in err
    assert "INTERRUPTED" in err.upper().split("THE REPORT:", 1)[1]

"""The process table read through ``ps`` and ``lsof``, as on macOS, against /proc on this machine:
real processes, the real ps (procps here), the probe switched by GREENLOOP_PLATFORM_PROBE."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cli_process import greenloop
from greenloop.processes import process_table
from greenloop.processes.process_table import ENV_BSD, ENV_PROCPS, PROBE_VAR, TAG_VAR
from process_state import exited_unreaped

PY = sys.executable
SLEEPER = "import sys, time; print('up', flush=True); time.sleep(60)"


@pytest.fixture
def sleeper(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """A child in its own group, holding a file open, carrying two command tags."""
    held = tmp_path / "held.txt"
    held.write_text("x")
    env = {**os.environ, TAG_VAR: "11.22.1 33.44.2"}
    with (
        held.open() as handle,
        subprocess.Popen(
            [PY, "-c", SLEEPER],
            stdin=handle,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            process_group=0,
        ) as child,
    ):
        assert child.stdout is not None
        assert child.stdout.readline() == "up\n"
        yield child
        child.kill()


def read_as(probe: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PROBE_VAR, probe)


def test_the_table_comes_from_proc_on_linux_and_from_ps_elsewhere_or_when_asked() -> None:
    assert process_table.uses_proc({}, "linux")
    assert not process_table.uses_proc({PROBE_VAR: "ps"}, "linux")
    assert not process_table.uses_proc({}, "darwin")
    assert not process_table.uses_proc({}, "freebsd14")


def test_ps_reads_a_process_as_proc_does_its_parent_group_and_state(
    sleeper: subprocess.Popen[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    read_as("proc", monkeypatch)
    from_proc = process_table.stat(sleeper.pid)
    read_as("ps", monkeypatch)
    from_ps = process_table.stat(sleeper.pid)
    whole = process_table.table()
    assert from_proc is not None
    assert from_ps is not None
    for proc in (from_ps, whole[sleeper.pid]):
        assert (proc.pid, proc.ppid, proc.pgrp) == (sleeper.pid, os.getpid(), sleeper.pid)
        assert proc.state[0] in "RS"  # running or sleeping: it may move between the two reads
        assert not proc.dead
    assert from_proc.state[0] in "RS"
    assert process_table.stat(os.getpid()) is not None


def test_both_probes_read_a_child_that_exited_unwaited_as_dead(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    child = subprocess.Popen([PY, "-c", "pass"])
    try:
        exited_unreaped(child.pid)  # exited, left a zombie
        for probe in ("proc", "ps"):
            read_as(probe, monkeypatch)
            zombie = process_table.stat(child.pid)
            assert zombie is not None, probe
            assert zombie.dead, probe
    finally:
        child.wait()


def test_ps_start_time_is_stable_for_a_process_and_never_earlier_for_a_later_one(
    sleeper: subprocess.Popen[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    read_as("ps", monkeypatch)
    first = process_table.start_of(sleeper.pid)
    assert first is not None
    assert first.isdigit()  # a word: the run lock and the command tags hold it
    assert process_table.start_of(sleeper.pid) == first
    mine = process_table.start_of(os.getpid())
    assert mine is not None
    assert int(mine) <= int(first)


def test_ps_reads_every_command_tag_of_a_process_as_proc_does(
    sleeper: subprocess.Popen[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    read_as("proc", monkeypatch)
    assert process_table.tags([sleeper.pid]) == {sleeper.pid: ["11.22.1", "33.44.2"]}
    read_as("ps", monkeypatch)
    assert process_table.tags([sleeper.pid, os.getpid()]) == {
        sleeper.pid: ["11.22.1", "33.44.2"],
        os.getpid(): [],
    }


def test_ps_names_a_process_as_proc_does(
    sleeper: subprocess.Popen[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    read_as("proc", monkeypatch)
    name = process_table.name(sleeper.pid)
    read_as("ps", monkeypatch)
    assert process_table.name(sleeper.pid) == name
    assert name.startswith("python")


def test_lsof_finds_a_file_a_process_holds_open_and_not_one_nobody_holds(
    sleeper: subprocess.Popen[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held, free = str(tmp_path / "held.txt"), str(tmp_path / "free.txt")
    Path(free).write_text("")
    for probe in ("proc", "ps"):
        read_as(probe, monkeypatch)
        assert process_table.held_open([held, free]) == {held}, probe


def test_a_gone_process_is_none_to_both_probes(monkeypatch: pytest.MonkeyPatch) -> None:
    done = subprocess.run(
        [PY, "-c", "import os; print(os.getpid())"], capture_output=True, check=True
    )
    pid = int(done.stdout)
    for probe in ("proc", "ps"):
        read_as(probe, monkeypatch)
        assert process_table.stat(pid) is None
        assert process_table.start_of(pid) is None


ESCAPER = """
import os, sys, time
greenloop = int(os.environ["GREENLOOP_COMMAND_TAG"].split()[-1].split(".")[0])
if os.fork() == 0:
    os.setsid()
    middle = os.getpid()
    if os.fork() == 0:
        while os.getppid() == middle:  # until the middle process has exited: re-parented
            time.sleep(0.01)
        open(sys.argv[1] + ".tmp", "w").write(f"{os.getpid()} {os.getppid()} {greenloop}")
        os.rename(sys.argv[1] + ".tmp", sys.argv[1])
        time.sleep(60)
    os._exit(0)
os.wait()
while not os.path.exists(sys.argv[1]):
    time.sleep(0.02)
"""


def test_only_the_linux_probe_makes_greenloop_the_subreaper_and_only_the_macos_one_runs_ps(
    make_repo: Callable[..., Path], tmp_path: Path, probe: str
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    real_ps = shutil.which("ps")
    assert real_ps is not None
    calls = tmp_path / "ps.calls"
    calls.write_text("")
    (bin_dir / "ps").write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexec {real_ps} "$@"\n')
    (bin_dir / "ps").chmod(0o755)
    facts = tmp_path / "daemon.facts"
    stage = f'[[tool.greenloop.stage]]\nname = "t"\nrun = "{PY} escaper.py {facts}"\n'
    root = make_repo({"escaper.py": ESCAPER, "pyproject.toml": stage})
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    out = greenloop(root, "check", env=env)
    pid, reaper, greenloop_pid = map(int, facts.read_text().split())
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"(pid {pid})" in out.stdout  # stopped, either way
    said = calls.read_text().splitlines()
    if probe == "proc":
        assert reaper == greenloop_pid  # the child subreaper (prctl)
        assert said == []
    else:
        assert reaper != greenloop_pid  # no prctl: init, or an ancestor that is a subreaper
        assert "-A -o pid=,ppid=,pgid=,stat=,lstart=" in said  # the whole table, as on a Mac
        flag = " ".join(ENV_PROCPS if sys.platform == "linux" else ENV_BSD)  # e; -E on a Mac
        assert any(line.startswith(f"-ww {flag} -o pid=,command= -p ") for line in said)

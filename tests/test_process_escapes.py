"""A process that leaves its command's process group (setsid: a daemon) is stopped when the
command ends: real greenloop processes, real daemons (tests/resources/escape.py), the process
table read from /proc with a subreaper (Linux) and through ps with none (macOS's path, forced)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cli_process import alive, greenloop
from greenloop.processes import orphans
from greenloop.processes.process import run_command
from limits import hang

PY = sys.executable
ESCAPE = (Path(__file__).parent / "resources" / "escape.py").read_text()
LINE = r"stopped 1 leftover process that escaped the command's process group: \S+ \(pid {pid}\)"


def gone(pid: int) -> bool:
    """Not even a zombie: stopped and reaped."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def ended(pid: int, probe: str) -> bool:
    """Stopped; reaped too where greenloop is the subreaper (Linux). With the macOS probe there is
    none: the daemon re-parented to init, whose it is to reap (this machine's init takes seconds)."""
    return gone(pid) if probe == "proc" else not alive(pid)


@pytest.fixture
def daemons(tmp_path: Path) -> Iterator[Path]:
    """A folder the daemons write their pids to; whatever is still alive is killed afterwards."""
    folder = tmp_path / "pids"
    folder.mkdir()
    yield folder
    for pidfile in folder.glob("*.pid"):
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pidfile.read_text()), signal.SIGKILL)


def repo(make_repo: Callable[..., Path], stages: str = "", **files: str) -> Path:
    return make_repo({"escape.py": ESCAPE, "pyproject.toml": stages, **files})


def stage(name: str, run: str) -> str:
    return f"[[tool.greenloop.stage]]\nname = {name!r}\nrun = {run!r}\n"


def pid_of(pidfile: Path) -> int:
    return int(pidfile.read_text())


def _lists_a_group(groups: Path) -> bool:
    """A kill -9 before greenloop wrote the agent's group there (a loaded machine can deschedule
    it right after the launch) makes recover find the agent by its tag too, as a second escape."""
    try:
        return bool(json.loads(groups.read_text()))
    except (OSError, ValueError):
        return False


def test_check_stops_and_reaps_a_daemon_a_passing_stage_left_writing_into_the_repository(
    make_repo: Callable[..., Path], daemons: Path, probe: str
) -> None:
    pidfile = daemons / "build.pid"
    stages = stage("build", f"{PY} escape.py daemon {pidfile} log.txt 0")
    stages += stage("test", f"{PY} escape.py under {pidfile}")  # greenloop's children, seen inside
    root = repo(make_repo, stages, **{".gitignore": "log.txt\n"})
    out = greenloop(root, "check")
    pid = pid_of(pidfile)
    assert ended(pid, probe), f"the daemon {pid} outlived greenloop check"
    assert out.returncode == 0, out.stdout + out.stderr  # the next stage saw no daemon, no zombie
    assert re.search("build: " + LINE.format(pid=pid), out.stdout), out.stdout
    size = (root / "log.txt").stat().st_size
    time.sleep(0.3)
    assert (root / "log.txt").stat().st_size == size  # nothing writes into the tree any more


def test_check_stops_a_daemon_a_failing_stage_left_and_says_so_in_json_but_not_in_the_digest(
    make_repo: Callable[..., Path], daemons: Path, probe: str
) -> None:
    pidfile = daemons / "test.pid"
    root = repo(make_repo, stage("test", f"{PY} escape.py daemon {pidfile} {daemons}/log 1"))
    data = json.loads(greenloop(root, "check", "--format", "json").stdout)
    pid = pid_of(pidfile)
    assert ended(pid, probe)
    assert data["verdict"] == "failed"
    assert [e["pid"] for e in data["stages"][0]["escaped"]] == [pid]
    assert "leftover" not in data["digest"]  # an environment fact, not the agent's business


def test_check_stops_a_daemon_left_by_a_stage_that_timed_out(
    make_repo: Callable[..., Path], daemons: Path, probe: str
) -> None:
    pidfile = daemons / "test.pid"
    root = repo(make_repo, stage("test", f"{PY} escape.py daemon {pidfile} {daemons}/log hang"))
    out = greenloop(root, "check", "--timeout", "30")  # the daemon must start first, under load too
    pid = pid_of(pidfile)
    assert out.returncode == 4, out.stdout  # timed out
    assert ended(pid, probe), f"the daemon {pid} outlived the timed-out stage"
    assert re.search("test: " + LINE.format(pid=pid), out.stdout), out.stdout


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_check_stopped_by_a_signal_stops_the_daemon_its_running_stage_started(
    make_repo: Callable[..., Path], daemons: Path, sig: signal.Signals, probe: str
) -> None:
    pidfile = daemons / "test.pid"
    root = repo(make_repo, stage("test", f"{PY} escape.py daemon {pidfile} {daemons}/log hang"))
    argv = [PY, "-m", "greenloop", "check"]
    with subprocess.Popen(argv, cwd=root, start_new_session=True) as check:
        deadline = time.monotonic() + hang(60)
        while not pidfile.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        check.send_signal(sig)
        check.wait(timeout=hang(60))
    pid = pid_of(pidfile)
    assert ended(pid, probe), f"the daemon {pid} outlived greenloop check stopped by {sig.name}"


def test_run_stops_a_daemon_the_agent_command_left_and_reports_it(
    make_repo: Callable[..., Path], daemons: Path, probe: str
) -> None:
    pidfile = daemons / "agent.pid"
    root = repo(make_repo, "", **{"impl.txt": "broken\n"})
    agent = f"{PY} escape.py daemon {pidfile} {daemons}/log 0 && echo fixed > impl.txt"
    verify = f"{PY} -c \"import sys; sys.exit(open('impl.txt').read() != 'fixed\\n')\""
    out = greenloop(root, "run", "--agent", agent, "-y", "--max-iters", "2", "--", verify)
    pid = pid_of(pidfile)
    assert ended(pid, probe), f"the agent's daemon {pid} outlived greenloop run"
    assert out.returncode == 0, out.stdout + out.stderr
    assert re.search("iteration 1, the agent: " + LINE.format(pid=pid), out.stdout), out.stdout


def test_check_interrupted_during_parallel_stages_stops_both_at_once_and_their_daemons(
    make_repo: Callable[..., Path], daemons: Path, probe: str
) -> None:
    # Ctrl-C reaches the main thread only; the stages' threads used to run on to their timeout
    stages = stage("lint", f"{PY} escape.py daemon {daemons}/lint.pid {daemons}/log hang")
    stages += stage("type", f"{PY} escape.py daemon {daemons}/type.pid {daemons}/log hang")
    root = repo(make_repo, stages)
    argv = [PY, "-m", "greenloop", "check"]
    with subprocess.Popen(argv, cwd=root, start_new_session=True) as check:
        deadline = time.monotonic() + hang(60)
        while len(list(daemons.glob("*.pid"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        check.send_signal(signal.SIGINT)
        try:
            code = check.wait(timeout=hang(60))
        except subprocess.TimeoutExpired:
            check.kill()
            pytest.fail("greenloop waited for its parallel stages to end after Ctrl-C")
    assert code == 130
    lint, type_ = pid_of(daemons / "lint.pid"), pid_of(daemons / "type.pid")
    assert ended(lint, probe)
    assert ended(type_, probe)


def test_recover_after_a_kill_9_stops_the_daemon_the_dead_run_s_agent_started(
    make_repo: Callable[..., Path], daemons: Path, probe: str
) -> None:
    pidfile = daemons / "agent.pid"
    root = repo(make_repo, "", **{"impl.txt": "broken\n"})
    agent = f"{PY} escape.py daemon {pidfile} {daemons}/log hang"
    argv = [PY, "-m", "greenloop", "run", "--agent", agent, "-y", "--", "false"]
    groups = root / ".git" / "greenloop" / "lock.groups"  # the agent's group, once recorded
    with subprocess.Popen(argv, cwd=root, start_new_session=True) as run:
        deadline = time.monotonic() + hang(60)
        while not (pidfile.exists() and _lists_a_group(groups)) and time.monotonic() < deadline:
            time.sleep(0.05)
        run.kill()  # greenloop dies at once: nothing of its own stops the daemon
    pid = pid_of(pidfile)
    recover = greenloop(root, "recover")
    assert recover.returncode == 0, recover.stdout + recover.stderr
    assert not alive(pid), f"the daemon {pid} outlived greenloop recover"  # init may reap it
    assert re.search(LINE.format(pid=pid), recover.stdout), recover.stdout


def test_check_leaves_a_parallel_stage_s_daemon_alive_while_that_stage_still_runs(
    make_repo: Callable[..., Path], daemons: Path, probe: str
) -> None:
    # lint and type run side by side; type's daemon is re-parented to greenloop while lint's
    # leftovers are stopped, and must survive that until type itself ends
    stages = stage("lint", f"{PY} escape.py lint {daemons}")
    stages += stage("type", f"{PY} escape.py type {daemons}")
    out = greenloop(repo(make_repo, stages), "check")
    lint, type_ = pid_of(daemons / "lint.pid"), pid_of(daemons / "type.pid")
    assert out.returncode == 0, out.stdout + out.stderr
    assert ended(lint, probe)
    assert ended(type_, probe)
    assert re.search("lint: " + LINE.format(pid=lint), out.stdout), out.stdout
    assert re.search("type: " + LINE.format(pid=type_), out.stdout), out.stdout


def test_process_leaves_a_daemon_alive_for_a_command_run_without_stop_escaped_like_git_s(
    tmp_path: Path, daemons: Path
) -> None:
    (tmp_path / "escape.py").write_text(ESCAPE)
    pidfile = daemons / "git.pid"
    argv = (PY, "escape.py", "daemon", str(pidfile), str(daemons / "log"), "0")
    result = run_command(argv, cwd=tmp_path, timeout_s=60, stop_escaped=False)
    assert result.exit_code == 0
    assert result.escaped == ()
    assert alive(pid_of(pidfile))  # git's fsmonitor daemon or gpg-agent is meant to stay


def test_orphans_scan_of_proc_finds_a_child_by_its_parent_pid_like_the_children_files() -> None:
    with subprocess.Popen([PY, "-c", "import time; time.sleep(30)"]) as child:
        try:
            assert child.pid in orphans.scan_parents()[os.getpid()]
            assert child.pid in orphans.child_lister()(os.getpid())
        finally:
            child.kill()


LIBRARY_HOST = """
import ctypes, sys
from greenloop import check

result, _ = check(sys.argv[1])
flag = ctypes.c_int(-1)
ctypes.CDLL(None, use_errno=True).prctl(37, ctypes.byref(flag), 0, 0, 0)  # PR_GET_CHILD_SUBREAPER
escaped = [e.pid for run in result.runs for e in run.result.escaped]
print(result.verdict.value, flag.value, escaped)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="asks prctl for the subreaper flag: Linux only")
def test_a_program_calling_check_as_a_library_is_not_made_a_subreaper_and_the_daemon_still_stops(
    make_repo: Callable[..., Path], daemons: Path, probe: str
) -> None:
    pidfile = daemons / "build.pid"
    stages = stage("build", f"{PY} escape.py daemon {pidfile} log.txt 0")
    root = repo(make_repo, stages, **{".gitignore": "log.txt\n"})
    host = subprocess.run(
        [PY, "-c", LIBRARY_HOST, str(root)],
        capture_output=True,
        text=True,
        timeout=hang(120),
        check=True,
    )
    pid = pid_of(pidfile)
    assert not alive(pid), f"the daemon {pid} outlived the library's check"
    # the host's other children's orphans would re-parent to it, zombies it never waits for
    assert host.stdout.split(maxsplit=2)[:2] == ["green", "0"], host.stdout + host.stderr
    assert host.stdout.split(maxsplit=2)[2].strip() == f"[{pid}]"

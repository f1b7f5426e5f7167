"""Issue 12: nothing lost on every stop path — real greenloop processes, real signals, real git.

The agent is a real subprocess (a shell command, or a fake CLI on PATH behind each preset's own
command line) that edits the tree, records its pid and then hangs until it is stopped.
"""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from limits import hang
from process_state import state

PY = sys.executable
VERIFY = f"{PY} -c \"import sys; print('FAILED test_x - assert 1 == 2'); sys.exit(1)\""
AGENT_BODY = (
    'echo $$ > "$PIDS/agent.pid"; echo fixed > impl.txt; echo made > new_by_agent.txt; '
    "exec sleep 120"
)


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout.strip()


def start_run(root: Path, agent: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [PY, "-m", "greenloop", "run", "--agent", agent, "-y", "--max-iters", "2", "--", VERIFY],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # like a terminal's job: signals go to greenloop alone
    )


def wait_for(predicate: Callable[[], bool], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + hang(timeout)
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.1)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    found = state(pid)  # None: gone between the two looks
    return found is None or found[:1] != "Z"


def group_recorded(root: Path, pid: int) -> bool:
    """Whether the run lists the process group of ``pid`` in ``lock.groups`` (runlock.py)."""
    groups = root / ".git" / "greenloop" / "lock.groups"
    try:
        return str(os.getpgid(pid)) in json.loads(groups.read_text())
    except (OSError, ValueError):
        return False


@pytest.fixture
def setup(make_repo: Callable[..., Path], tmp_path: Path) -> tuple[Path, dict[str, str]]:
    root = make_repo(
        {"impl.txt": "broken\n", ".gitignore": "secret.env\n__pycache__/\n"}, name="work"
    )
    (root / "secret.env").write_text("API=1\n")  # ignored, untracked: the user's own file
    pids = tmp_path / "pids"
    pids.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for cli in ("claude", "aider", "codex", "gemini"):  # each preset's command line, real process
        exe = bin_dir / cli
        exe.write_text(f"#!/bin/sh\n{AGENT_BODY}\n")
        exe.chmod(0o755)
    env = {**os.environ, "PIDS": str(pids), "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    return root, env


def assert_attempt_kept_and_branch_restored(root: Path, initial: str, output: str) -> None:
    assert git(root, "rev-parse", "HEAD") == initial
    assert git(root, "status", "--porcelain") == ""
    refs = git(root, "for-each-ref", "--format=%(refname)", "refs/greenloop/").split()
    assert len(refs) == 1, refs
    assert git(root, "show", f"{refs[0]}:impl.txt") == "fixed"
    assert git(root, "show", f"{refs[0]}:new_by_agent.txt") == "made"
    assert (root / "secret.env").read_text() == "API=1\n"
    assert not (root / ".git" / "greenloop" / "lock").exists()
    assert refs[0] in output
    assert "git apply" in output  # how to get the edits back


@pytest.mark.parametrize(
    ("agent", "sig"),
    [
        ("sh -c '" + AGENT_BODY.replace("'", "") + "'", signal.SIGINT),
        ("claude", signal.SIGTERM),
        ("aider", signal.SIGHUP),
        ("codex", signal.SIGINT),
        ("gemini", signal.SIGTERM),
    ],
)
def test_run_keeps_the_agents_edits_when_stopped_during_the_agent(
    setup: tuple[Path, dict[str, str]], agent: str, sig: signal.Signals, probe: str
) -> None:
    root, env = setup
    env = {**env, "GREENLOOP_PLATFORM_PROBE": probe}  # the conftest's, for the processes
    initial = git(root, "rev-parse", "HEAD")
    proc = start_run(root, agent, env)
    pid_file = Path(env["PIDS"]) / "agent.pid"
    wait_for(lambda: pid_file.exists() and (root / "new_by_agent.txt").exists())
    proc.send_signal(sig)
    output, _ = proc.communicate(timeout=hang(120))
    assert proc.returncode == 130, output
    assert_attempt_kept_and_branch_restored(root, initial, output)
    wait_for(lambda: not alive(int(pid_file.read_text())), timeout=60)


def test_double_ctrl_c_still_finishes_and_leaves_no_process(
    setup: tuple[Path, dict[str, str]], probe: str
) -> None:
    root, env = setup
    env = {**env, "GREENLOOP_PLATFORM_PROBE": probe}  # the conftest's, for the processes
    initial = git(root, "rev-parse", "HEAD")
    proc = start_run(root, "claude", env)
    pid_file = Path(env["PIDS"]) / "agent.pid"
    wait_for(lambda: pid_file.exists() and (root / "new_by_agent.txt").exists())
    proc.send_signal(signal.SIGINT)
    time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=hang(120))
    assert proc.returncode == 130, output
    assert_attempt_kept_and_branch_restored(root, initial, output)
    events = next((root / ".git" / "greenloop" / "runs").iterdir()) / "events.jsonl"
    assert '"kind": "finish"' in events.read_text()
    assert not alive(int(pid_file.read_text()))


def test_recover_stops_the_survivors_of_a_kill_9_and_clears_a_stale_git_lock(
    setup: tuple[Path, dict[str, str]], probe: str
) -> None:
    root, env = setup
    env = {**env, "GREENLOOP_PLATFORM_PROBE": probe}  # the conftest's, for the processes
    initial = git(root, "rev-parse", "HEAD")
    proc = start_run(root, "sh -c '" + AGENT_BODY.replace("'", "") + "'", env)
    pid_file = Path(env["PIDS"]) / "agent.pid"
    wait_for(lambda: pid_file.exists() and (root / "new_by_agent.txt").exists())
    # the kill comes once greenloop has written the agent's group beside the lock: at load 15 the
    # agent's three echoes could finish before greenloop, descheduled after the launch, wrote it
    # (recover then still stops the agent, found by its tag, but as "escaped its group")
    wait_for(lambda: group_recorded(root, int(pid_file.read_text())))
    proc.kill()  # greenloop alone: its agent lives on in its own session
    proc.communicate(timeout=hang(60))
    agent_pid = int(pid_file.read_text())
    assert alive(agent_pid)
    (root / ".git" / "index.lock").write_text("")  # as if killed inside git reset --hard
    recover = subprocess.run(
        [PY, "-m", "greenloop", "recover"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=hang(120),
        check=False,
    )
    assert recover.returncode == 0, recover.stderr
    assert "stopped its processes" in recover.stdout
    assert "index.lock" in recover.stdout
    wait_for(lambda: not alive(agent_pid), timeout=60)
    assert git(root, "rev-parse", "HEAD") == initial
    assert git(root, "status", "--porcelain") == ""
    ref = git(root, "for-each-ref", "--format=%(refname)", "refs/greenloop/")
    assert git(root, "show", f"{ref}:impl.txt") == "fixed"


def test_an_agent_rewriting_gitignore_never_gets_the_users_ignored_file_committed_or_deleted(
    setup: tuple[Path, dict[str, str]],
) -> None:
    root, env = setup
    initial = git(root, "rev-parse", "HEAD")
    agent = "printf '__pycache__/\\n' > .gitignore; echo fixed > impl.txt"
    run = subprocess.run(
        [PY, "-m", "greenloop", "run", "--agent", agent, "-y", "--max-iters", "1", "--", VERIFY],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=hang(300),
        check=False,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert git(root, "rev-parse", "HEAD") == initial
    assert (root / "secret.env").read_text() == "API=1\n"
    assert git(root, "log", "--all", "--format=%H", "--", "secret.env") == ""


def test_an_edit_from_another_terminal_during_verification_is_named_in_the_report(
    setup: tuple[Path, dict[str, str]],
) -> None:
    root, env = setup
    (root / "notes.txt").write_text("mine\n")
    git(root, "add", "notes.txt")
    git(root, "commit", "-qm", "notes")
    # the second verifier run stands for a person typing in another terminal meanwhile
    verify = (
        f"{PY} -c \"import pathlib, sys; c = pathlib.Path('{root}/.count'); "
        "n = int(c.read_text()) + 1 if c.exists() else 1; c.write_text(str(n)); "
        "n == 2 and open('notes.txt', 'a').write('typed meanwhile\\n'); "
        "print('FAILED test_x - assert 1 == 2'); sys.exit(1)\""
    )
    (root / ".git" / "info" / "exclude").write_text(".count\n")
    run = subprocess.run(
        [PY, "-m", "greenloop", "run", "--agent", "echo more >> impl.txt", "-y", "--", verify],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=hang(300),
        check=False,
    )
    assert "edited outside the agent's turn" in run.stdout, run.stdout + run.stderr
    assert "notes.txt" in run.stdout
    ref = git(root, "for-each-ref", "--format=%(refname)", "refs/greenloop/").split()[0]
    assert "typed meanwhile" in git(root, "show", f"{ref}:notes.txt")


def test_recover_after_kill_9_never_commits_a_file_the_run_found_ignored(
    setup: tuple[Path, dict[str, str]], probe: str
) -> None:
    root, env = setup
    env = {**env, "GREENLOOP_PLATFORM_PROBE": probe}  # the conftest's, for the processes
    agent = "printf '__pycache__/\\n' > .gitignore; echo $$ > \"$PIDS/agent.pid\"; exec sleep 120"
    proc = start_run(root, agent, env)
    pid_file = Path(env["PIDS"]) / "agent.pid"
    wait_for(pid_file.exists)
    proc.kill()
    proc.communicate(timeout=hang(60))
    recover = subprocess.run(
        [PY, "-m", "greenloop", "recover"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=hang(120),
        check=False,
    )
    assert recover.returncode == 0, recover.stderr
    assert (root / "secret.env").read_text() == "API=1\n"
    assert git(root, "log", "--all", "--format=%H", "--", "secret.env") == ""


def test_simultaneous_runs_on_one_repository_one_wins_the_others_refuse_with_the_lock(
    setup: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    root, env = setup
    initial = git(root, "rev-parse", "HEAD")
    go = tmp_path / "go"
    agent = f"while [ ! -e {go} ]; do sleep 0.1; done; echo fixed > impl.txt"
    verify = f"{PY} -c \"import sys; sys.exit(open('impl.txt').read() != 'fixed\\n')\""
    argv = [PY, "-m", "greenloop", "run", "--agent", agent, "--max-iters", "2", "--", verify]
    # three terminals at the pre-flight question, answered at once: every run has passed
    # pre-flight (no lock yet) and goes for the lock in the same instant
    runs = [Prompted.start(argv, root, env) for _ in range(3)]
    try:
        wait_for(lambda: all("Start? [Y/n]" in r.seen() for r in runs))
        for r in runs:
            os.write(r.terminal, b"y\n")
        # the winner's agent waits for `go`, so the losers meet a lock that is held
        wait_for(lambda: sum(r.proc.poll() is not None for r in runs) == 2)
    finally:
        go.touch()
    outputs = [r.finish() for r in runs]

    winners = [o for o in outputs if o[0] == 0]
    losers = [o for o in outputs if o[0] != 0]
    assert len(winners) == 1, outputs
    runs_dir = root / ".git" / "greenloop" / "runs"
    records = sorted(runs_dir.iterdir())
    assert len(records) == 1, records  # the losers recorded nothing: no phantom "(no report)"
    only = records[0]
    for code, out in losers:
        assert code == 2, out
        assert f"another greenloop run ({only.name}, pid " in out  # the winner, named
        assert "is in progress" in out
        assert "Traceback" not in out
    report = json.loads((only / "report.json").read_text())
    assert report["result"] == "success"
    assert not (root / ".git" / "greenloop" / "lock").exists()
    assert git(root, "rev-parse", "HEAD~1") == initial  # one iteration commit, the winner's
    assert (root / "impl.txt").read_text() == "fixed\n"
    assert git(root, "status", "--porcelain") == ""
    assert (root / "secret.env").read_text() == "API=1\n"  # the user's ignored file, untouched
    listed = subprocess.run(
        [PY, "-m", "greenloop", "runs"], cwd=root, env=env, capture_output=True, text=True,
        check=True,
    ).stdout  # fmt: skip
    assert "(no report)" not in listed
    assert only.name in listed


def test_ctrl_d_at_the_start_question_is_a_no_not_an_internal_error(
    setup: tuple[Path, dict[str, str]],
) -> None:
    root, env = setup
    initial = git(root, "rev-parse", "HEAD")
    argv = [PY, "-m", "greenloop", "run", "--agent", "true", "--max-iters", "1", "--", "false"]
    prompted = Prompted.start(argv, root, env)
    wait_for(lambda: "Start? [Y/n]" in prompted.seen())
    os.write(prompted.terminal, b"\x04")  # end of input, as Ctrl-D sends it
    code, out = prompted.finish()
    assert "not started, nothing touched" in out, out
    assert "internal error" not in out
    assert "Traceback" not in out
    assert git(root, "rev-parse", "HEAD") == initial
    assert not (root / ".git" / "greenloop" / "runs").exists()
    assert code == 0  # declined: a choice, as "n" is


@dataclass(slots=True)
class Prompted:
    """A greenloop process whose stdin is a terminal (so it asks before it starts)."""

    proc: subprocess.Popen[bytes]
    terminal: int
    chunks: list[bytes]
    reader: threading.Thread

    @classmethod
    def start(cls, argv: list[str], root: Path, env: dict[str, str]) -> Prompted:
        terminal, tty = pty.openpty()
        proc = subprocess.Popen(
            argv, cwd=root, env=env, stdin=tty, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        os.close(tty)
        chunks: list[bytes] = []
        out = proc.stdout
        assert out is not None
        reader = threading.Thread(target=lambda: chunks.extend(iter(out.read1, b"")))
        reader.start()
        return cls(proc=proc, terminal=terminal, chunks=chunks, reader=reader)

    def seen(self) -> str:
        return b"".join(self.chunks).decode(errors="replace")

    def finish(self) -> tuple[int, str]:
        code = self.proc.wait(timeout=hang(120))
        self.reader.join(timeout=hang(60))
        os.close(self.terminal)
        return code, self.seen()

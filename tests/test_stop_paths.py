"""Issue 12: nothing lost on every stop path — real greenloop processes, real signals, real git.

The agent is a real subprocess (a shell command, or a fake CLI on PATH behind each preset's own
command line) that edits the tree, records its pid and then hangs until it is stopped.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

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
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.1)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


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
    setup: tuple[Path, dict[str, str]], agent: str, sig: signal.Signals
) -> None:
    root, env = setup
    initial = git(root, "rev-parse", "HEAD")
    proc = start_run(root, agent, env)
    pid_file = Path(env["PIDS"]) / "agent.pid"
    wait_for(lambda: pid_file.exists() and (root / "new_by_agent.txt").exists())
    proc.send_signal(sig)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, output
    assert_attempt_kept_and_branch_restored(root, initial, output)
    wait_for(lambda: not alive(int(pid_file.read_text())), timeout=10)


def test_double_ctrl_c_still_finishes_and_leaves_no_process(
    setup: tuple[Path, dict[str, str]],
) -> None:
    root, env = setup
    initial = git(root, "rev-parse", "HEAD")
    proc = start_run(root, "claude", env)
    pid_file = Path(env["PIDS"]) / "agent.pid"
    wait_for(lambda: pid_file.exists() and (root / "new_by_agent.txt").exists())
    proc.send_signal(signal.SIGINT)
    time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, output
    assert_attempt_kept_and_branch_restored(root, initial, output)
    events = next((root / ".git" / "greenloop" / "runs").iterdir()) / "events.jsonl"
    assert '"kind": "finish"' in events.read_text()
    assert not alive(int(pid_file.read_text()))


def test_recover_stops_the_survivors_of_a_kill_9_and_clears_a_stale_git_lock(
    setup: tuple[Path, dict[str, str]],
) -> None:
    root, env = setup
    initial = git(root, "rev-parse", "HEAD")
    proc = start_run(root, "sh -c '" + AGENT_BODY.replace("'", "") + "'", env)
    pid_file = Path(env["PIDS"]) / "agent.pid"
    wait_for(lambda: pid_file.exists() and (root / "new_by_agent.txt").exists())
    proc.kill()  # greenloop alone: its agent lives on in its own session
    proc.communicate(timeout=60)
    agent_pid = int(pid_file.read_text())
    assert alive(agent_pid)
    (root / ".git" / "index.lock").write_text("")  # as if killed inside git reset --hard
    recover = subprocess.run(
        [PY, "-m", "greenloop", "recover"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert recover.returncode == 0, recover.stderr
    assert "stopped its processes" in recover.stdout
    assert "index.lock" in recover.stdout
    wait_for(lambda: not alive(agent_pid), timeout=10)
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
        timeout=300,
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
        timeout=300,
        check=False,
    )
    assert "edited outside the agent's turn" in run.stdout, run.stdout + run.stderr
    assert "notes.txt" in run.stdout
    ref = git(root, "for-each-ref", "--format=%(refname)", "refs/greenloop/").split()[0]
    assert "typed meanwhile" in git(root, "show", f"{ref}:notes.txt")


def test_recover_after_kill_9_never_commits_a_file_the_run_found_ignored(
    setup: tuple[Path, dict[str, str]],
) -> None:
    root, env = setup
    agent = "printf '__pycache__/\\n' > .gitignore; echo $$ > \"$PIDS/agent.pid\"; exec sleep 120"
    proc = start_run(root, agent, env)
    pid_file = Path(env["PIDS"]) / "agent.pid"
    wait_for(pid_file.exists)
    proc.kill()
    proc.communicate(timeout=60)
    recover = subprocess.run(
        [PY, "-m", "greenloop", "recover"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert recover.returncode == 0, recover.stderr
    assert (root / "secret.env").read_text() == "API=1\n"
    assert git(root, "log", "--all", "--format=%H", "--", "secret.env") == ""

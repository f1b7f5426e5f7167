from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from greenloop import git
from greenloop.errors import FatalError
from greenloop.loop import checkpoints as cp
from greenloop.loop import runlock
from greenloop.loop.preflight import RepoState, preflight
from greenloop.loop.recover import recover
from greenloop.loop.rollback import finish_revert, rollback
from greenloop.loop.squash import squash

MakeRepo = Callable[..., Path]


def sh(root: Path, *args: str) -> str:
    return git.git(root, *args).stdout.strip()


def head(root: Path) -> str:
    return sh(root, "rev-parse", "HEAD")


def message(root: Path, rev: str = "HEAD") -> str:
    return sh(root, "log", "-1", "--format=%B", rev)


@pytest.fixture
def repo(make_repo: MakeRepo) -> Path:
    return make_repo({"calc.py": "def add(a, b):\n    return a - b\n", "test_calc.py": "x = 1\n"})


def commit_edit(state: RepoState, rel: str, text: str, n: int, prev: str) -> cp.CommitInfo:
    (state.root / rel).write_text(text)
    return cp.commit_iteration(
        state, previous_sha=prev, iteration=n, max_iters=5, subject="", run_id="r1"
    )


# ---------------------------------------------------------------- pre-flight


def test_preflight_records_branch_and_initial_commit(repo: Path) -> None:
    state = preflight(repo / ".")
    assert state.branch == "main"
    assert state.initial_sha == head(repo)
    assert state.common_dir == (repo / ".git").resolve()


def test_preflight_refuses_dirty_tree_and_leaves_the_file_intact(repo: Path) -> None:
    (repo / "calc.py").write_text("edited by hand\n")
    (repo / "notes.txt").write_text("untracked\n")
    before = sh(repo, "status", "--porcelain")
    with pytest.raises(FatalError) as info:
        preflight(repo)
    text = str(info.value)
    assert "calc.py" in text
    assert "notes.txt" in text
    assert "commit or stash them first" in text
    assert (repo / "calc.py").read_text() == "edited by hand\n"
    assert (repo / "notes.txt").read_text() == "untracked\n"
    assert sh(repo, "status", "--porcelain") == before


def test_preflight_lists_at_most_ten_dirty_paths(repo: Path) -> None:
    for i in range(13):
        (repo / f"f{i:02}.txt").write_text("x")
    with pytest.raises(FatalError, match=r"and 3 more"):
        preflight(repo)


def test_preflight_refuses_detached_head(repo: Path) -> None:
    sh(repo, "checkout", "--quiet", "--detach", "HEAD")
    with pytest.raises(FatalError, match="check out a branch"):
        preflight(repo)


def test_preflight_refuses_outside_git_and_without_commits(tmp_path: Path) -> None:
    with pytest.raises(FatalError, match="not inside a git work tree"):
        preflight(tmp_path)
    sh(tmp_path, "init", "-q")
    with pytest.raises(FatalError, match="no commit yet"):
        preflight(tmp_path)


def test_preflight_refuses_a_merge_in_progress(repo: Path) -> None:
    sh(repo, "checkout", "-q", "-b", "other")
    (repo / "calc.py").write_text("other\n")
    sh(repo, "commit", "-qam", "other")
    sh(repo, "checkout", "-q", "main")
    (repo / "calc.py").write_text("main\n")
    sh(repo, "commit", "-qam", "main")
    git.git(repo, "merge", "other", check=False)
    with pytest.raises(FatalError, match="a merge is in progress"):
        preflight(repo)


# ---------------------------------------------------------------- lock


def test_second_lock_is_refused_while_the_first_is_held(repo: Path) -> None:
    state = preflight(repo)
    with cp.acquire_lock(state, "run-a") as lock:
        assert json.loads(lock.path.read_text())["run_id"] == "run-a"
        with (
            pytest.raises(FatalError, match=r"another greenloop run \(run-a, pid"),
            cp.acquire_lock(state, "run-b"),
        ):
            pass
    assert not lock.path.exists()


def test_lock_is_released_on_keyboard_interrupt(repo: Path) -> None:
    state = preflight(repo)
    with pytest.raises(KeyboardInterrupt), cp.acquire_lock(state, "run-a"):
        raise KeyboardInterrupt
    assert not runlock.lock_path(state.common_dir).exists()


def test_lock_of_a_dead_process_says_to_run_recover(repo: Path) -> None:
    state = preflight(repo)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    path = runlock.lock_path(state.common_dir)
    path.parent.mkdir(parents=True)
    data = {"run_id": "old-run", "pid": dead.pid, "branch": "main", "initial_sha": head(repo)}
    path.write_text(json.dumps({**data, "started_at": 0.0}))
    with pytest.raises(FatalError, match=r"previous run \(old-run\).*greenloop recover"):
        cp.acquire_lock(state, "new-run").__enter__()
    with pytest.raises(FatalError, match=r"greenloop recover"):
        preflight(repo)


def test_runlock_names_the_winner_to_every_rival_when_many_start_at_once(tmp_path: Path) -> None:
    for trial in range(100):  # a half-written lock read by a rival shows as run "?"
        common = tmp_path / str(trial)
        won, refusals = race_for_the_lock(common, rivals=8)
        (winner,) = won
        assert all(f"another greenloop run ({winner}, pid {os.getpid()})" in r for r in refusals)
        assert sorted(p.name for p in (common / "greenloop").iterdir()) == ["lock"]  # no temp


def race_for_the_lock(common: Path, rivals: int) -> tuple[list[str], list[str]]:
    """``rivals`` threads write the lock in the same instant: the run ids that won, the refusals."""
    gate = threading.Barrier(rivals)
    won: list[str] = []
    refusals: list[str] = []

    def start(n: int) -> None:
        lock = runlock.new_lock(
            common, f"run-{n}", branch="main", initial_sha="0" * 40, root=common, ignored=()
        )
        gate.wait()
        try:
            won.append(runlock.write_lock(lock).run_id)
        except FatalError as exc:
            refusals.append(str(exc))

    threads = [threading.Thread(target=start, args=(n,)) for n in range(rivals)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return won, refusals


def test_new_run_id_is_sortable_and_timestamped() -> None:
    run_id = cp.new_run_id(now=lambda: time.mktime((2026, 12, 2, 12, 34, 56, 0, 0, -1)))
    assert run_id.startswith("20261202-123456-")
    assert len(run_id) == len("20261202-123456-a1b2")


# ---------------------------------------------------------------- iteration commits


def test_commit_iteration_message_has_subject_files_and_trailer(repo: Path) -> None:
    state = preflight(repo)
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    info = cp.commit_iteration(
        state,
        previous_sha=state.initial_sha,
        iteration=2,
        max_iters=5,
        subject="Fix add\nsecond line ignored",
        run_id="20261202-123456-a1b2",
    )
    assert info.created
    assert info.sha == head(repo) != state.initial_sha
    assert info.files_changed == ("calc.py",)
    assert info.agent_commits == ()
    text = message(repo)
    assert text.splitlines()[0] == "agent[iter 2/5]: Fix add"
    assert "  calc.py" in text
    assert text.splitlines()[-1] == "Greenloop-Run: 20261202-123456-a1b2"
    trailers = sh(repo, "log", "-1", "--format=%(trailers:key=Greenloop-Run,valueonly)")
    assert trailers == "20261202-123456-a1b2"
    assert sh(repo, "rev-list", "--count", "HEAD") == "2"  # no amend: a new commit on top


def test_commit_iteration_defaults_subject_to_changed_files_and_caps_length(repo: Path) -> None:
    state = preflight(repo)
    info = commit_edit(state, "calc.py", "a\n", 1, state.initial_sha)
    assert message(repo).splitlines()[0] == "agent[iter 1/5]: edit calc.py"
    (repo / "calc.py").write_text("b\n")
    cp.commit_iteration(
        state, previous_sha=info.sha, iteration=2, max_iters=5, subject="y" * 200, run_id="r1"
    )
    subject = message(repo).splitlines()[0].removeprefix("agent[iter 2/5]: ")
    assert len(subject) == 72


def test_commit_iteration_skips_the_users_hooks(repo: Path) -> None:
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nexit 1\n")
    hook.chmod(0o755)
    state = preflight(repo)
    info = commit_edit(state, "calc.py", "a\n", 1, state.initial_sha)
    assert info.created


def test_commit_iteration_without_changes_creates_nothing(repo: Path) -> None:
    state = preflight(repo)
    info = cp.commit_iteration(
        state, previous_sha=state.initial_sha, iteration=1, max_iters=5, subject="x", run_id="r"
    )
    assert info == cp.CommitInfo(
        sha=state.initial_sha, files_changed=(), agent_commits=(), created=False
    )


def test_commit_iteration_keeps_and_records_the_agents_own_commits(repo: Path) -> None:
    state = preflight(repo)
    (repo / "calc.py").write_text("agent commit\n")
    sh(repo, "commit", "-qam", "aider: fix add")
    agent_sha = head(repo)
    (repo / "new.py").write_text("left uncommitted\n")
    info = cp.commit_iteration(
        state, previous_sha=state.initial_sha, iteration=1, max_iters=3, subject="", run_id="r"
    )
    assert info.agent_commits == (agent_sha,)
    assert info.created
    assert sh(repo, "rev-parse", "HEAD~1") == agent_sha
    assert message(repo, agent_sha) == "aider: fix add"
    assert set(info.files_changed) == {"calc.py", "new.py"}
    assert message(repo).splitlines()[0] == "agent[iter 1/3]: edit new.py"
    assert agent_sha in message(repo)


def test_commit_iteration_with_only_agent_commits_creates_none_of_its_own(repo: Path) -> None:
    state = preflight(repo)
    (repo / "calc.py").write_text("agent commit\n")
    sh(repo, "commit", "-qam", "agent")
    info = cp.commit_iteration(
        state, previous_sha=state.initial_sha, iteration=1, max_iters=3, subject="", run_id="r"
    )
    assert not info.created
    assert info.sha == head(repo)
    assert info.agent_commits == (head(repo),)
    assert info.files_changed == ("calc.py",)


def test_commit_iteration_uses_fallback_identity_when_none_is_configured(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    environ = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home)}
    environ["GIT_CONFIG_NOSYSTEM"] = "1"
    git.git(root, "init", "-q", "-b", "main", environ=environ)
    (root / "a.txt").write_text("a\n")
    git.git(root, "add", "a.txt", environ=environ)
    ident = ("-c", "user.name=Setup", "-c", "user.email=setup@example.com")
    git.git(root, *ident, "commit", "-qm", "init", environ=environ)
    assert git.config_value(root, "user.name", environ=environ) is None
    state = preflight(root)
    (root / "a.txt").write_text("b\n")
    cp.commit_iteration(
        state,
        previous_sha=state.initial_sha,
        iteration=1,
        max_iters=1,
        subject="s",
        run_id="r",
        environ=environ,
    )
    who = sh(root, "log", "-1", "--format=%an <%ae>|%cn <%ce>")
    assert who == "greenloop <greenloop@localhost>|greenloop <greenloop@localhost>"


def test_commit_iteration_uses_the_users_identity_when_configured(repo: Path) -> None:
    state = preflight(repo)
    commit_edit(state, "calc.py", "a\n", 1, state.initial_sha)
    assert sh(repo, "log", "-1", "--format=%an <%ae>") == "Dev <dev@example.com>"


def test_diff_and_files_since_cover_the_committed_iterations(repo: Path) -> None:
    state = preflight(repo)
    first = commit_edit(
        state, "calc.py", "def add(a, b):\n    return a + b\n", 1, state.initial_sha
    )
    (repo / "test_calc.py").unlink()
    commit_edit(state, "extra.py", "y\n", 2, first.sha)
    assert set(cp.files_since(state, state.initial_sha)) == {"calc.py", "extra.py", "test_calc.py"}
    diff = cp.diff_since(state, state.initial_sha, context=0)
    assert "+    return a + b" in diff
    assert "deleted file mode" in diff
    assert "\x1b[" not in diff


# ---------------------------------------------------------------- rollback, revert, squash


def test_rollback_keeps_the_attempt_reachable_via_the_ref(repo: Path) -> None:
    state = preflight(repo)
    good = commit_edit(state, "calc.py", "good\n", 1, state.initial_sha)
    bad = commit_edit(state, "calc.py", "bad\n", 2, good.sha)
    (repo / "stray.txt").write_text("uncommitted leftovers\n")
    ref = rollback(state, to_sha=good.sha, keep_ref=cp.attempt_ref("r1", "iter-2"))
    assert ref == "refs/greenloop/r1-iter-2"
    assert head(repo) == good.sha
    assert (repo / "calc.py").read_text() == "good\n"
    assert not (repo / "stray.txt").exists()
    assert sh(repo, "status", "--porcelain") == ""
    assert sh(repo, "rev-parse", f"{ref}~1") == bad.sha
    assert sh(repo, "show", f"{ref}:stray.txt") == "uncommitted leftovers"


def test_finish_revert_leaves_a_clean_tree_at_the_initial_commit(repo: Path) -> None:
    state = preflight(repo)
    first = commit_edit(state, "calc.py", "one\n", 1, state.initial_sha)
    second = commit_edit(state, "other.py", "two\n", 2, first.sha)
    ref = finish_revert(state, "r1")
    assert ref == "refs/greenloop/r1"
    assert head(repo) == state.initial_sha
    assert sh(repo, "symbolic-ref", "--short", "HEAD") == "main"
    assert sh(repo, "status", "--porcelain") == ""
    assert not (repo / "other.py").exists()
    assert sh(repo, "rev-list", f"{state.initial_sha}..{ref}").split() == [second.sha, first.sha]


def test_attempt_ref_and_suffixed_refs_coexist(repo: Path) -> None:
    state = preflight(repo)
    first = commit_edit(state, "calc.py", "one\n", 1, state.initial_sha)
    commit_edit(state, "calc.py", "two\n", 2, first.sha)
    rollback(state, to_sha=first.sha, keep_ref=cp.attempt_ref("r1", "iter-2"))
    commit_edit(state, "calc.py", "three\n", 3, first.sha)
    ref = finish_revert(state, "r1")
    refs = sh(repo, "for-each-ref", "--format=%(refname)", "refs/greenloop/").split()
    assert refs == ["refs/greenloop/r1", "refs/greenloop/r1-iter-2"]
    assert sh(repo, "show", f"{ref}:calc.py") == "three"


def test_keep_ref_never_overwrites_other_work(repo: Path) -> None:
    state = preflight(repo)
    first = commit_edit(state, "calc.py", "one\n", 1, state.initial_sha)
    cp.keep_ref(repo, "refs/greenloop/x", first.sha)
    sh(repo, "reset", "-q", "--hard", state.initial_sha)
    other = commit_edit(state, "calc.py", "other\n", 1, state.initial_sha)
    assert cp.keep_ref(repo, "refs/greenloop/x", other.sha) == "refs/greenloop/x-2"
    assert cp.keep_ref(repo, "refs/greenloop/x", state.initial_sha) == "refs/greenloop/x"
    assert sh(repo, "rev-parse", "refs/greenloop/x") == first.sha


def test_squash_folds_the_iterations_into_one_commit(repo: Path) -> None:
    state = preflight(repo)
    first = commit_edit(state, "calc.py", "one\n", 1, state.initial_sha)
    second = commit_edit(state, "other.py", "two\n", 2, first.sha)
    sha = squash(state, message="greenloop: fixed 4 failures in 2 iterations", run_id="r1")
    assert sh(repo, "rev-parse", "HEAD~1") == state.initial_sha
    assert sha == head(repo)
    assert sh(repo, "rev-parse", "HEAD^{tree}") == sh(repo, "rev-parse", f"{second.sha}^{{tree}}")
    assert message(repo).startswith("greenloop: fixed 4 failures in 2 iterations")
    assert message(repo).endswith("Greenloop-Run: r1")
    assert sh(repo, "rev-parse", "refs/greenloop/r1-pre-squash") == second.sha


# ---------------------------------------------------------------- recover after kill -9


def orphan(lock: runlock.RunLock) -> None:
    """Make the lock look like one left by a process that has died."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    data = json.loads(lock.path.read_text())
    lock.path.write_text(json.dumps({**data, "pid": dead.pid}))


CHILD = """
import sys, time
from pathlib import Path
from greenloop.loop import checkpoints as cp
from greenloop.loop.preflight import preflight
root = Path(sys.argv[1])
state = preflight(root)
with cp.acquire_lock(state, "killed-run"):
    (root / "calc.py").write_text("iteration one\\n")
    cp.commit_iteration(state, previous_sha=state.initial_sha, iteration=1, max_iters=5,
                        subject="first try", run_id="killed-run")
    (root / "wip.py").write_text("half-written by the agent\\n")
    (root / "calc.py").write_text("iteration two, uncommitted\\n")
    print("ready", flush=True)
    time.sleep(60)
"""


def test_recover_after_kill_9_restores_the_branch_and_keeps_everything(
    repo: Path, probe: str
) -> None:
    initial = head(repo)
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(repo)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    with pytest.raises(FatalError, match=r"previous run \(killed-run\).*greenloop recover"):
        preflight(repo)

    result = recover(repo)

    assert result.run_id == "killed-run"
    assert result.saved_uncommitted
    assert result.attempt_ref == "refs/greenloop/killed-run"
    assert head(repo) == initial
    assert sh(repo, "symbolic-ref", "--short", "HEAD") == "main"
    assert sh(repo, "status", "--porcelain") == ""
    ref = result.attempt_ref
    subjects = sh(repo, "log", "--format=%s", f"{initial}..{ref}").splitlines()
    assert subjects == [
        "greenloop: recovered uncommitted work of run killed-run",
        "agent[iter 1/5]: first try",
    ]
    assert sh(repo, "show", f"{ref}:wip.py") == "half-written by the agent"
    assert sh(repo, "show", f"{ref}:calc.py") == "iteration two, uncommitted"
    assert sh(repo, "show", f"{ref}~1:calc.py") == "iteration one"
    assert not runlock.lock_path(repo / ".git").exists()
    preflight(repo)  # a new run may start


def test_recover_twice_is_harmless_and_second_says_nothing_to_recover(repo: Path) -> None:
    state = preflight(repo)
    lock = runlock.write_lock(cp.lock_for(state, "r9"))
    commit_edit(state, "calc.py", "one\n", 1, state.initial_sha)
    finish_revert(state, "r9")  # killed right after the revert, before unlocking
    attempt = sh(repo, "rev-parse", "refs/greenloop/r9")
    orphan(lock)
    result = recover(repo)
    assert result.attempt_ref == "refs/greenloop/r9"
    assert sh(repo, "rev-parse", "refs/greenloop/r9") == attempt
    with pytest.raises(FatalError, match="nothing to recover"):
        recover(repo)


def test_recover_checks_the_runs_branch_out_again(repo: Path) -> None:
    state = preflight(repo)
    lock = runlock.write_lock(cp.lock_for(state, "r8"))
    commit_edit(state, "calc.py", "one\n", 1, state.initial_sha)
    sh(repo, "checkout", "-q", "-b", "agent-branch")
    (repo / "calc.py").write_text("on the agent's branch\n")
    orphan(lock)
    result = recover(repo)
    assert sh(repo, "symbolic-ref", "--short", "HEAD") == "main"
    assert head(repo) == state.initial_sha
    assert sh(repo, "show", f"{result.attempt_ref}:calc.py") == "on the agent's branch"


def test_recover_refuses_a_live_run(repo: Path) -> None:
    state = preflight(repo)
    with cp.acquire_lock(state, "live"), pytest.raises(FatalError, match="still in progress"):
        recover(repo)


def test_critical_section_delivers_ctrl_c_only_after_the_git_change_is_whole() -> None:
    steps: list[str] = []

    def interrupted_change() -> None:
        with cp.critical():
            os.kill(os.getpid(), signal.SIGINT)
            steps.append("finished despite Ctrl-C")

    with pytest.raises(KeyboardInterrupt):
        interrupted_change()
    assert steps == ["finished despite Ctrl-C"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_commit_iteration_keeps_a_checkpoint_the_agent_reset_away(repo: Path) -> None:
    state = preflight(repo)
    first = commit_edit(state, "calc.py", "one\n", 1, state.initial_sha)
    sh(repo, "reset", "-q", "--hard", state.initial_sha)  # the agent throws our commit away
    commit_edit(state, "calc.py", "two\n", 2, first.sha)
    assert sh(repo, "rev-parse", "refs/greenloop/r1-before-iter-2") == first.sha


def test_squash_of_iterations_that_cancel_out_leaves_the_initial_commit(repo: Path) -> None:
    state = preflight(repo)
    original = (repo / "calc.py").read_text()
    first = commit_edit(state, "calc.py", "one\n", 1, state.initial_sha)
    commit_edit(state, "calc.py", original, 2, first.sha)
    assert squash(state, message="m", run_id="r1") == state.initial_sha
    assert sh(repo, "status", "--porcelain") == ""

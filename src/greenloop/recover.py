"""``greenloop recover``: finish what a killed run left behind, keeping every byte of its work.

Stop the dead run's surviving children, clear git lock files no process holds, commit the
leftovers into the attempt ref, put the branch back where the run found it, remove the lock.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from greenloop import git
from greenloop.checkpoints import attempt_ref, critical
from greenloop.errors import FatalError
from greenloop.orphans import Escaped, describe
from greenloop.preflight import ABORT_HINT, RepoState, operation_in_progress
from greenloop.rollback import move_branch, save_attempt
from greenloop.runlock import lock_is_live, read_lock, stop_escapes, stop_survivors


@dataclass(frozen=True, slots=True, kw_only=True)
class RecoverResult:
    run_id: str
    branch: str
    initial_sha: str
    attempt_ref: str
    saved_uncommitted: bool
    """Whether uncommitted work was found and committed into the attempt before restoring."""
    extra_refs: tuple[str, ...] = ()
    """Further refs kept (a branch tip the agent left behind, an already-used attempt ref)."""
    stopped_groups: tuple[int, ...] = ()
    """Process groups of the dead run (its agent, its verifier) that were still running."""
    cleared_locks: tuple[str, ...] = ()
    """git lock files the killed run left behind, held by no live process, removed."""
    stopped_escaped: tuple[Escaped, ...] = ()
    """Processes the dead run's commands started outside their groups (a daemon), stopped."""


def recover(cwd: Path) -> RecoverResult:
    """Finish a killed run: commit its leftovers, keep its attempt, restore the branch, unlock."""
    root = git.get_root(cwd)
    if root is None:
        raise FatalError(f"{cwd} is not inside a git work tree")
    common = git.common_dir(root)
    lock = read_lock(common)
    if lock is None:
        raise FatalError("nothing to recover: no unfinished greenloop run in this repository")
    if lock_is_live(lock):
        raise FatalError(f"run {lock.run_id} is still in progress (pid {lock.pid}); stop it first")
    stopped = stop_survivors(common)  # before touching the tree: nothing may edit it behind us
    escaped = stop_escapes(lock)
    if not lock.initial_sha:
        lock.path.unlink()  # torn lock: the run died before doing anything
        return RecoverResult(
            run_id="?", branch="", initial_sha="", attempt_ref="", saved_uncommitted=False
        )
    if lock.root and Path(lock.root).is_dir():
        root = Path(lock.root)  # the run's own worktree
    git_dir = git.git_dir(root)
    cleared = clear_stale_git_locks(git_dir, common)
    operation = operation_in_progress(git_dir)
    if operation:
        raise FatalError(f"{operation} is in progress; finish it first ({ABORT_HINT[operation]})")
    state = RepoState(
        root=root,
        git_dir=git_dir,
        common_dir=common,
        branch=lock.branch,
        initial_sha=lock.initial_sha,
        ignored=tuple(lock.ignored),
    )
    message = (
        f"greenloop: recovered uncommitted work of run {lock.run_id}\n\n"
        f"Greenloop-Run: {lock.run_id}\n"
    )
    with critical():
        saved, kept = save_attempt(state, attempt_ref(lock.run_id), message)
        move_branch(state, lock.initial_sha)
        lock.path.unlink()
    return RecoverResult(
        run_id=lock.run_id,
        branch=lock.branch,
        initial_sha=lock.initial_sha,
        attempt_ref=kept[0],
        saved_uncommitted=saved,
        extra_refs=kept[1:],
        stopped_groups=stopped,
        stopped_escaped=escaped,
        cleared_locks=cleared,
    )


def clear_stale_git_locks(git_dir: Path, common_dir: Path) -> tuple[str, ...]:
    """Remove git's lock files (``index.lock``, ``refs/…/x.lock``) that no live process holds.

    A run killed while git was inside ``reset --hard`` or ``update-ref`` leaves them, and every
    later git command then refuses to run.
    """
    candidates = [git_dir / "index.lock", git_dir / "HEAD.lock", common_dir / "packed-refs.lock"]
    for base in {git_dir / "refs", common_dir / "refs"}:
        candidates += sorted(base.rglob("*.lock")) if base.is_dir() else []
    stale = [p for p in dict.fromkeys(candidates) if p.is_file()]
    if not stale:
        return ()
    held = _open_files()
    cleared = []
    for path in stale:
        if str(path.resolve()) not in held:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            cleared.append(str(path))
    return tuple(cleared)


def _open_files() -> set[str]:
    """Every file some process on this machine has open (Linux /proc; empty elsewhere)."""
    files: set[str] = set()
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        with contextlib.suppress(OSError):
            for fd in fd_dir.iterdir():
                with contextlib.suppress(OSError):
                    files.add(os.readlink(fd))
    return files


def main_recover(args: argparse.Namespace) -> int:
    result = recover(Path(args.repo).resolve())
    if not result.attempt_ref:
        print("greenloop: removed the lock of a run killed as it started; nothing else to restore")
        return 0
    lines = [f"greenloop: recovered run {result.run_id}"]
    if result.stopped_groups:
        pids = ", ".join(map(str, result.stopped_groups))
        lines.append(f"  stopped its processes still running (process groups {pids})")
    if result.stopped_escaped:
        lines.append(f"  {describe(result.stopped_escaped)}")
    lines += [f"  removed a stale git lock no process held: {p}" for p in result.cleared_locks]
    if result.saved_uncommitted:
        lines.append("  its uncommitted work was committed into the attempt first")
    lines += [
        f"  branch {result.branch} restored to {result.initial_sha[:12]}",
        f"  the attempt is kept: git log {result.attempt_ref}",
        f"  its changes:         git diff {result.initial_sha[:12]} {result.attempt_ref}",
        *(f"  also kept:           git log {ref}" for ref in result.extra_refs),
    ]
    print("\n".join(lines))
    return 0

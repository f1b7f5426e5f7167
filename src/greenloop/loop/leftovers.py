"""What an agent leaves behind in git, tidied around its iteration's commit.

Before the commit: a lock file no process holds (``index.lock``: every git command would refuse), a
rebase, merge or cherry-pick left half-done (it would outlive the run, and its ``--abort`` would undo
a revert), a folder it ran ``git init`` in (left untracked, never committed nor deleted). After the
commit: a branch it switched to, whose work goes back on the run's branch when that fast-forwards.
Each is named in the run's warnings; nothing the agent wrote is dropped.
"""

from __future__ import annotations

from greenloop import git
from greenloop.loop import checkpoints
from greenloop.loop.preflight import operation_in_progress
from greenloop.loop.recover import clear_stale_git_locks
from greenloop.loop.session import RunState

QUIT = {
    "a rebase": "rebase",
    "a rebase or am": "rebase",
    "a merge": "merge",
    "a cherry-pick": "cherry-pick",
    "a revert": "revert",
}


def before_commit(run: RunState) -> None:
    clear_locks(run)
    quit_operation(run)
    keep_unborn_repos(run)


def clear_locks(run: RunState) -> None:
    """The agent's processes are gone: a git lock no process holds was left by one of them."""
    cleared = clear_stale_git_locks(run.state.git_dir, run.state.common_dir)
    if cleared:
        run.warnings.append(f"removed {', '.join(cleared)}: the agent left it, no process held it")


def quit_operation(run: RunState) -> None:
    """A rebase, merge … the agent left half-done (a conflict) is forgotten, the tree kept as it
    is."""
    operation = operation_in_progress(run.state.git_dir) or ""
    command = QUIT.get(operation)
    if command:
        git.git(run.state.root, *git.NO_HOOKS, command, "--quit", check=False)
        run.warnings.append(
            f"the agent left {operation} in progress: ended with git {command} --quit"
        )


def keep_unborn_repos(run: RunState) -> None:
    """Left untracked, as a verifier's by-products are: never committed nor deleted."""
    nested = set(git.unborn_repos(run.state.root)) - run.by_products
    if nested:
        run.by_products.update(nested)
        shown = ", ".join(sorted(nested))
        run.warnings.append(
            f"{shown}: a git repository with no commit yet (git init); left untracked"
        )


def back_on_branch(run: RunState) -> None:
    """The agent switched branches (``git checkout -b``) or detached HEAD: its checkpointed work
    goes back on the run's branch when that is a fast-forward, so the run ends where it began."""
    state = run.state
    now = git.current_branch(state.root)
    if now == state.branch:
        return
    tip = git.rev_parse(state.root, f"refs/heads/{state.branch}")
    head = git.rev_parse(state.root, "HEAD") or state.initial_sha
    where = f"branch {now}" if now else "a detached HEAD"
    if tip is None or git.is_ancestor(state.root, tip, head):
        with checkpoints.critical():
            git.checkout_here(state.root, state.branch)
        run.warnings.append(f"the agent moved to {where}; its work was put back on {state.branch}")
    else:
        run.warnings.append(f"the agent moved to {where}; branch {state.branch} was not changed")

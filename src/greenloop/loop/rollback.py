"""Rollback: put the run's branch back at a recorded commit, keeping the attempt reachable.

Every rollback goes to a recorded commit (an iteration checkpoint, or the commit the run started
from) and keeps the attempt reachable: first the leftovers are committed and the old head kept
under ``refs/greenloop/``, then the branch and the tree move. Mid-run: ``rollback``; at the end of
a failed run: ``finish_revert``; after a kill: ``recover``.
"""

from __future__ import annotations

from greenloop import git
from greenloop.errors import FatalError
from greenloop.loop.checkpoints import attempt_ref, critical, head_sha, keep_ref, save_leftovers
from greenloop.loop.preflight import RepoState


def save_attempt(
    state: RepoState, ref: str, message: str, exclude: tuple[str, ...] = ()
) -> tuple[bool, tuple[str, ...]]:
    """Commit leftovers, keep HEAD (and the run's branch tip, if the agent left it) under ``ref``.

    Returns whether there were leftovers, and the refs now keeping the work (``ref`` first).
    """
    saved = save_leftovers(state.root, message, exclude=(*exclude, *state.ignored))
    head = head_sha(state.root)
    kept = [keep_ref(state.root, ref, head)]
    tip = git.rev_parse(state.root, f"refs/heads/{state.branch}")
    if tip is not None and not git.is_ancestor(state.root, tip, head):
        kept.append(keep_ref(state.root, f"{ref}-branch", tip))  # the agent switched branches
    return saved, tuple(kept)


def move_branch(state: RepoState, to_sha: str, exclude: tuple[str, ...] = ()) -> None:
    """Put the run's branch and the (clean) tree at ``to_sha``, checking the branch out first.

    Untracked files in ``exclude`` or ignored at the start stay as they are (reset leaves them).
    """
    keep = (*exclude, *state.ignored)
    if any(
        not (code == "??" and covered(path, keep))
        for path, code in git.status_paths(state.root).items()
    ):
        raise FatalError("refusing to reset: the work tree is not clean (nothing was changed)")
    if git.current_branch(state.root) != state.branch:
        if git.rev_parse(state.root, f"refs/heads/{state.branch}") is None:
            git.create_branch_at(state.root, state.branch, to_sha)
            return
        git.checkout(state.root, state.branch)
    git.reset_hard(state.root, to_sha)


def covered(path: str, paths: tuple[str, ...]) -> bool:
    """``path`` is one of ``paths`` or inside one of its directories (``dir/``)."""
    return any(path == p or (p.endswith("/") and path.startswith(p)) for p in paths)


def rollback(state: RepoState, *, to_sha: str, keep_ref: str, exclude: tuple[str, ...] = ()) -> str:
    """Return branch and tree to ``to_sha``; the rolled-back head stays under ``keep_ref``.

    Returns the ref actually used (``keep_ref``, or ``keep_ref-N`` if that already held other work).
    """
    with critical():
        _, kept = save_attempt(
            state, keep_ref, "greenloop: uncommitted work before rollback", exclude
        )
        move_branch(state, to_sha, exclude)
    return kept[0]


def finish_revert(state: RepoState, run_id: str, exclude: tuple[str, ...] = ()) -> str:
    """Keep the whole attempt under ``refs/greenloop/<run_id>``; the branch back at the start.

    ``exclude``: untracked files the agent did not make (the verifier's by-products): left alone.
    """
    message = f"greenloop: uncommitted work at the end of run {run_id}\n\nGreenloop-Run: {run_id}\n"
    with critical():
        _, kept = save_attempt(state, attempt_ref(run_id), message, exclude)
        move_branch(state, state.initial_sha, exclude)
    return kept[0]


def bring_back_command(initial_sha: str, attempt: str) -> str:
    """The command that puts an attempt's changes back into the tree, whatever the diff config."""
    return (
        "git diff --binary --no-ext-diff --src-prefix=a/ --dst-prefix=b/ "
        f"{initial_sha[:12]} {attempt} | git apply"
    )

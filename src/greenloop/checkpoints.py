"""Git checkpoints of a run: iteration commits, rollback, attempt refs.

Nothing is ever lost: every move of the branch first commits what the tree holds and keeps the
old head reachable under ``refs/greenloop/``. Before: ``preflight`` and the ``runlock``; after a
kill: ``recover``.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from greenloop import git, runlock, signals
from greenloop.errors import FatalError
from greenloop.preflight import RepoState

REF_PREFIX = "refs/greenloop/"
FALLBACK_IDENTITY = {"user.name": "greenloop", "user.email": "greenloop@localhost"}
SUBJECT_MAX = 72
BODY_PATHS = 50


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitInfo:
    """What one iteration's checkpoint holds."""

    sha: str
    """HEAD after the checkpoint (the agent's own commit or HEAD when nothing changed)."""
    files_changed: tuple[str, ...]
    """Paths that differ between the previous checkpoint and ``sha``."""
    agent_commits: tuple[str, ...]
    """Commits the agent made itself during the iteration, oldest first; kept as they are."""
    created: bool
    """Whether greenloop made a commit (False when the tree had nothing left to commit)."""


# ---------------------------------------------------------------- run id and lock


def new_run_id(now: Callable[[], float] = time.time) -> str:
    """A sortable, unique-enough id: ``20261202-123456-a1b2`` (local time)."""
    return time.strftime("%Y%m%d-%H%M%S", time.localtime(now())) + "-" + secrets.token_hex(2)


def lock_for(state: RepoState, run_id: str) -> runlock.RunLock:
    """The lock of a run starting now on ``state``: what ``recover`` needs to restore it."""
    return runlock.new_lock(
        state.common_dir,
        run_id,
        branch=state.branch,
        initial_sha=state.initial_sha,
        root=state.root,
        ignored=state.ignored,
    )


def acquire_lock(
    state: RepoState, run_id: str
) -> contextlib.AbstractContextManager[runlock.RunLock]:
    """Hold the repository's run lock for the run (see ``runlock.acquire``)."""
    return runlock.acquire(lock_for(state, run_id))


# ---------------------------------------------------------------- critical sections


@contextlib.contextmanager
def critical() -> Iterator[None]:
    """Hold Ctrl-C, SIGTERM and SIGHUP until a multi-step git change is whole, then deliver them.

    Without this, an interrupt would kill git half-way through a reset or leave the branch moved
    without its attempt ref. kill -9 cannot be held: ``recover`` handles that.
    """
    with signals.held():
        yield


# ---------------------------------------------------------------- commits and refs


def attempt_ref(run_id: str, suffix: str = "") -> str:
    """``refs/greenloop/<run_id>``, or ``refs/greenloop/<run_id>-<suffix>`` for a partial keep.

    A dash, not a slash: git cannot hold both ``refs/x`` and ``refs/x/y``.
    """
    return f"{REF_PREFIX}{run_id}-{suffix}" if suffix else f"{REF_PREFIX}{run_id}"


def commit_iteration(
    state: RepoState,
    *,
    previous_sha: str,
    iteration: int,
    max_iters: int,
    subject: str,
    run_id: str,
    exclude: tuple[str, ...] = (),
    environ: Mapping[str, str] | None = None,
) -> CommitInfo:
    """Checkpoint everything the agent left: its own commits kept, the rest committed on top.

    ``exclude``: untracked files that were there before the agent ran (the verifier's by-products,
    such as an unignored ``__pycache__``): they stay untracked, out of the agent's commit.
    """
    with critical():
        agent_commits = git.rev_list(state.root, f"{previous_sha}..HEAD")
        if not git.is_ancestor(state.root, previous_sha, "HEAD"):
            # the agent reset or rebased past our checkpoint: keep the checkpoint reachable
            keep_ref(state.root, attempt_ref(run_id, f"before-iter-{iteration}"), previous_sha)
        git.add_all(state.root)
        if exclude or state.ignored:
            git.unstage(state.root, (*exclude, *state.ignored))
        staged = git.staged_paths(state.root)
        if staged:
            line = f"agent[iter {iteration}/{max_iters}]: {_subject(subject, staged)}"
            body = _body(staged, agent_commits)
            _commit(state.root, f"{line}\n\n{body}\n\nGreenloop-Run: {run_id}\n", environ)
    head = _head(state.root)
    return CommitInfo(
        sha=head,
        files_changed=git.diff_names(state.root, previous_sha, head),
        agent_commits=agent_commits,
        created=bool(staged),
    )


def _subject(subject: str, staged: tuple[str, ...]) -> str:
    lines = [" ".join(line.split()) for line in subject.splitlines()]
    text = next((line for line in lines if line), "")
    if not text:
        text = "edit " + ", ".join(staged[:3]) + (" …" if len(staged) > 3 else "")
    return text if len(text) <= SUBJECT_MAX else text[: SUBJECT_MAX - 1].rstrip() + "…"


def _body(staged: tuple[str, ...], agent_commits: tuple[str, ...]) -> str:
    lines = ["Files:", *(f"  {p}" for p in staged[:BODY_PATHS])]
    if len(staged) > BODY_PATHS:
        lines.append(f"  ... and {len(staged) - BODY_PATHS} more")
    if agent_commits:
        lines += ["", "Agent commits kept:", *(f"  {sha}" for sha in agent_commits)]
    return "\n".join(lines)


def _commit(root: Path, message: str, environ: Mapping[str, str] | None = None) -> None:
    """Commit with the user's identity, filling in greenloop's only for keys not configured."""
    identity = {
        key: value
        for key, value in FALLBACK_IDENTITY.items()
        if git.config_value(root, key, environ=environ) is None
    }
    git.commit(root, message, identity=identity, environ=environ)


def _head(root: Path) -> str:
    sha = git.rev_parse(root, "HEAD")
    if sha is None:
        raise FatalError("HEAD no longer names a commit; inspect the repository with git log")
    return sha


def diff_since(state: RepoState, sha: str, *, context: int = 3) -> str:
    return git.diff_commits(state.root, sha, "HEAD", context=context)


def files_since(state: RepoState, sha: str) -> tuple[str, ...]:
    return git.diff_names(state.root, sha, "HEAD")


def save_leftovers(
    root: Path,
    message: str,
    environ: Mapping[str, str] | None = None,
    *,
    exclude: tuple[str, ...] = (),
) -> bool:
    """Commit whatever the tree still holds but ``exclude`` (nothing lost); True when there was something."""
    if not git.status_paths(root):
        return False
    git.add_all(root)
    if exclude:
        git.unstage(root, exclude)
    if not git.staged_paths(root):
        return False
    _commit(root, message, environ)
    return True


def keep_ref(root: Path, ref: str, sha: str) -> str:
    """Point ``ref`` at ``sha`` without ever dropping what ``ref`` already holds.

    Returns the ref that now keeps ``sha``: ``ref`` itself, or ``ref-N`` when ``ref`` already
    held other work that ``sha`` does not contain.
    """
    candidate, n = ref, 1
    while True:
        current = git.rev_parse(root, candidate)
        if current is None:
            git.update_ref(root, candidate, sha)
            return candidate
        if current == sha or git.is_ancestor(root, sha, current):
            return candidate
        if git.is_ancestor(root, current, sha):
            git.update_ref(root, candidate, sha)  # the old value stays in sha's history
            return candidate
        n += 1
        candidate = f"{ref}-{n}"


def save_attempt(
    state: RepoState, ref: str, message: str, exclude: tuple[str, ...] = ()
) -> tuple[bool, tuple[str, ...]]:
    """Commit leftovers, keep HEAD (and the run's branch tip, if the agent left it) under ``ref``.

    Returns whether there were leftovers, and the refs now keeping the work (``ref`` first).
    """
    saved = save_leftovers(state.root, message, exclude=(*exclude, *state.ignored))
    head = _head(state.root)
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


def squash(state: RepoState, *, message: str, run_id: str) -> str:
    """Fold initial_sha..HEAD into one commit; the pre-squash head kept under ``<ref>-pre-squash``."""
    if "Greenloop-Run:" not in message:
        message = f"{message.rstrip()}\n\nGreenloop-Run: {run_id}\n"
    with critical():
        save_leftovers(state.root, f"greenloop: uncommitted work of run {run_id}")
        head = _head(state.root)
        if head == state.initial_sha:
            return head
        keep_ref(state.root, attempt_ref(run_id, "pre-squash"), head)
        message = _with_iterations(message, git.log_messages(state.root, state.initial_sha, head))
        git.reset_soft(state.root, state.initial_sha)
        if git.staged_paths(state.root):  # else the iterations cancelled out: nothing to fold
            _commit(state.root, message)
    return _head(state.root)


def _with_iterations(message: str, messages: tuple[str, ...]) -> str:
    """The squashed commit keeps each folded commit's subject and body, trailers aside."""
    head, _, trailer = message.rpartition("\n\nGreenloop-Run:")
    kept = [
        "\n".join(line for line in m.strip().splitlines() if not line.startswith("Greenloop-Run:"))
        for m in messages
    ]
    body = "\n\n".join(k.strip() for k in kept if k.strip())
    return f"{head}\n\n{body}\n\nGreenloop-Run:{trailer}"

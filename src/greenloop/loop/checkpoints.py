"""Git checkpoints of a run: its id and lock, iteration commits, attempt refs.

Nothing is ever lost: commits go on top (never amended) and ``keep_ref`` never drops what a ref
holds. Moving the branch over them: ``rollback`` and ``squash``. Before: ``preflight`` and the
``runlock``; after a kill: ``recover``.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from greenloop import git, signals
from greenloop.errors import FatalError
from greenloop.loop import runlock
from greenloop.loop.preflight import RepoState

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
            commit_as_user(state.root, f"{line}\n\n{body}\n\nGreenloop-Run: {run_id}\n", environ)
    head = head_sha(state.root)
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


def commit_as_user(root: Path, message: str, environ: Mapping[str, str] | None = None) -> None:
    """Commit with the user's identity, filling in greenloop's only for keys not configured."""
    identity = {
        key: value
        for key, value in FALLBACK_IDENTITY.items()
        if git.config_value(root, key, environ=environ) is None
    }
    git.commit(root, message, identity=identity, environ=environ)


def head_sha(root: Path) -> str:
    """The commit HEAD names; a ``FatalError`` when it names none."""
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
    commit_as_user(root, message, environ)
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

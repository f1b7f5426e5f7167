"""Git checkpoints of a run: pre-flight, iteration commits, rollback, attempt refs.

Nothing is ever lost: every move of the branch first commits what the tree holds and keeps the
old head reachable under ``refs/greenloop/``. The run lock is ``runlock``; ``recover`` finishes
what a killed run left behind.
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

REF_PREFIX = "refs/greenloop/"
FALLBACK_IDENTITY = {"user.name": "greenloop", "user.email": "greenloop@localhost"}
SUBJECT_MAX = 72
SHOWN_PATHS = 10
BODY_PATHS = 50
# Files git leaves in the git dir while an operation waits for the user.
IN_PROGRESS = {
    "rebase-merge": "a rebase",
    "rebase-apply": "a rebase or am",
    "MERGE_HEAD": "a merge",
    "CHERRY_PICK_HEAD": "a cherry-pick",
    "REVERT_HEAD": "a revert",
    "BISECT_LOG": "a bisect",
}
ABORT_HINT = {
    "a rebase": "git rebase --continue or --abort",
    "a rebase or am": "git rebase --abort or git am --abort",
    "a merge": "git merge --continue or --abort",
    "a cherry-pick": "git cherry-pick --continue or --abort",
    "a revert": "git revert --continue or --abort",
    "a bisect": "git bisect reset",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class RepoState:
    """The repository as a run found it."""

    root: Path
    git_dir: Path
    common_dir: Path
    """Shared by all worktrees: the lock and the run records live here."""
    branch: str
    initial_sha: str
    """The commit the branch pointed at when the run started; every revert returns here."""
    ignored: tuple[str, ...] = ()
    """Paths git ignored when the run started (directories end in ``/``): never staged, even
    after an agent rewrites ``.gitignore``, so never committed nor deleted by a revert."""


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


# ---------------------------------------------------------------- pre-flight


def preflight(cwd: Path) -> RepoState:
    """Check the repository can host a run; raise FatalError with the fix, touching nothing."""
    if not git.is_inside_work_tree(cwd):
        raise FatalError(f"{cwd} is not inside a git work tree; run greenloop in a git repository")
    root = git.get_root(cwd) or cwd
    head = git.rev_parse(root, "HEAD")
    if head is None:
        raise FatalError("the repository has no commit yet; commit your files first")
    git_dir = git.git_dir(root)
    operation = operation_in_progress(git_dir)
    if operation:
        raise FatalError(f"{operation} is in progress; finish it first ({ABORT_HINT[operation]})")
    branch = git.current_branch(root)
    if branch is None:
        raise FatalError("HEAD is detached; check out a branch first (git switch -c <name>)")
    common = git.common_dir(root)
    lock = runlock.read_lock(common)
    if lock is not None:  # a killed run's leftovers would otherwise read as a dirty tree
        if not runlock.lock_is_live(lock):
            runlock.stop_survivors(
                common
            )  # its agent must not go on editing while the user recovers
        raise FatalError(runlock.held_message(lock))
    _refuse_dirty(root, common)
    return RepoState(
        root=root,
        git_dir=git_dir,
        common_dir=common,
        branch=branch,
        initial_sha=head,
        ignored=git.ignored_paths(root),
    )


def operation_in_progress(git_dir: Path) -> str | None:
    for name, what in IN_PROGRESS.items():
        if (git_dir / name).exists():
            return what
    return None


def _refuse_dirty(root: Path, common: Path) -> None:
    paths = sorted(git.status_paths(root).items())
    if not paths:
        return
    made = set(read_by_products(common))
    shown = "\n".join(
        f"  {code.strip():<2} {path}{'  (created by a verifier run)' if path in made else ''}"
        for path, code in paths[:SHOWN_PATHS]
    )
    more = f"\n  ... and {len(paths) - SHOWN_PATHS} more" if len(paths) > SHOWN_PATHS else ""
    hint = ""
    if made & {p for p, code in paths if code == "??"}:
        hint = (
            "\nfiles a verifier run created (e.g. a lock file) belong in a commit, or in "
            ".gitignore if they are build output"
        )
    raise FatalError(
        f"the work tree has uncommitted changes:\n{shown}{more}\n"
        f"commit or stash them first; greenloop never touches uncommitted work{hint}"
    )


def by_products_path(common_dir: Path) -> Path:
    return common_dir / "greenloop" / "by-products"


def read_by_products(common_dir: Path) -> tuple[str, ...]:
    """Untracked files a verifier run (``check`` or a run's baseline) was seen to create."""
    try:
        text = by_products_path(common_dir).read_text(encoding="utf-8")
    except OSError:
        return ()
    return tuple(line for line in text.splitlines() if line)


def note_by_products(common_dir: Path, paths: tuple[str, ...]) -> None:
    """Remember ``paths`` so the dirty-tree refusal can say where they came from."""
    if paths:
        known = dict.fromkeys((*read_by_products(common_dir), *paths))
        target = by_products_path(common_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("".join(f"{p}\n" for p in known), encoding="utf-8")


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

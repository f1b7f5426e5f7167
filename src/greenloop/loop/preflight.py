"""Pre-flight: may a run start in this repository? ``RepoState``, the repository as a run finds it.

Refuses, touching nothing, a missing commit, a detached HEAD, a rebase or merge in progress, a git
dir this user cannot write, a run lock (live, or left by a killed run: then its surviving children
are stopped first) and uncommitted work, naming the files a verifier run created among it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from greenloop import git
from greenloop.errors import FatalError
from greenloop.loop import runlock

SHOWN_PATHS = 10
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


def preflight(cwd: Path) -> RepoState:
    """Check the repository can host a run; raise FatalError with the fix, touching nothing."""
    probe = git.git(cwd, "rev-parse", "--is-inside-work-tree", check=False)
    if probe.error:  # git itself could not start: not a question about the repository
        raise FatalError(f"{probe.error}: greenloop run needs git; install it or put it on PATH")
    if probe.exit_code != 0 or probe.stdout.strip() != "true":
        raise FatalError(_not_a_work_tree(cwd, probe.stderr))
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
    _refuse_unwritable(git_dir, common)
    lock = runlock.read_lock(common)
    if lock is not None:  # a killed run's leftovers would otherwise read as a dirty tree
        if not runlock.lock_is_live(lock):
            runlock.stop_survivors(common)  # its agent must not edit on while the user recovers
            runlock.stop_escapes(lock)
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


def _not_a_work_tree(cwd: Path, stderr: str) -> str:
    """git's own reason when it refuses a repository it found (another user's: safe.directory)."""
    fatal = [line for line in stderr.splitlines() if line.startswith("fatal:")]
    if fatal and "not a git repository" not in fatal[0]:
        fix = [line.strip() for line in stderr.splitlines() if "safe.directory" in line]
        hint = f"; if you trust it: `{fix[-1]}`" if fix else ""
        return f"git refuses {cwd}: {fatal[0].removeprefix('fatal: ')}{hint}"
    return f"{cwd} is not inside a git work tree; run greenloop in a git repository"


def _refuse_unwritable(git_dir: Path, common: Path) -> None:
    """A run commits every iteration and keeps its lock and records in the git dir."""
    for folder in dict.fromkeys((git_dir, common, common / "greenloop")):
        if folder.is_dir() and not os.access(folder, os.W_OK):
            raise FatalError(
                f"this user cannot write {folder}, and greenloop run commits every iteration and "
                "keeps its lock and records in the git dir; run it in a clone you own, or fix the "
                "permissions (`greenloop check` and the Stop hook work without writing there)"
            )


def operation_in_progress(git_dir: Path) -> str | None:
    for name, what in IN_PROGRESS.items():
        if (git_dir / name).exists():
            return what
    return None


def _refuse_dirty(root: Path, common: Path) -> None:
    inside = {path: " M" for path in git.dirty_submodules(root)}  # the user's, in a submodule
    every = {**git.status_paths(root), **inside}
    if not every:
        return
    # as `git status` shows them: an untracked .venv is one line, not its 1,271 files (issue 26)
    paths = sorted({**git.status_paths(root, untracked="normal"), **inside}.items())
    made = set(read_by_products(common))
    environments = {p: what for p, code in paths if code == "??" and (what := environment(root, p))}
    shown = "\n".join(  # the code as `git status --short` prints it: ` M` unstaged, `M ` staged
        f"  {code} {path}{_note(path, every, made, environments)}"
        for path, code in paths[:SHOWN_PATHS]
    )
    more = f"\n  ... and {len(paths) - SHOWN_PATHS} more" if len(paths) > SHOWN_PATHS else ""
    hint = ""
    if made & {p for p, code in every.items() if code == "??"}:
        hint = (
            "\nfiles a verifier run created (e.g. a lock file) belong in a commit, or in "
            ".gitignore if they are build output"
        )
    advice = "commit or stash them first; greenloop never touches uncommitted work"
    if environments:
        keep_out = _keep_out(list(environments), _exclude_file(root, common))
        rest = len(paths) > len(environments)
        advice = f"{keep_out}\nthe rest: {advice}" if rest else f"{keep_out}; then run again"
    raise FatalError(f"the work tree has uncommitted changes:\n{shown}{more}\n{advice}{hint}")


def _keep_out(folders: list[str], exclude: str) -> str:
    """An environment is kept out of git, not committed or stashed."""
    if len(folders) == 1:
        return (
            f"{folders[0]} is an environment, not work to commit: add it to .gitignore, "
            f"or for this clone only: echo {folders[0]} >> {exclude}"
        )
    return (
        f"{', '.join(folders)} are environments, not work to commit: add them to .gitignore, "
        f"or for this clone only: printf '%s\\n' {' '.join(folders)} >> {exclude}"
    )


def _note(path: str, every: dict[str, str], made: set[str], environments: dict[str, str]) -> str:
    """What a listed path is: a verifier's by-product, or an environment and its file count."""
    if path in environments:
        files = sum(1 for p in every if p.startswith(path))
        return f"  ({environments[path]}, {files:,} file{'s' if files != 1 else ''})"
    if path in made or (path.endswith("/") and any(m.startswith(path) for m in made)):
        return "  (created by a verifier run)"
    return ""


# Folders that hold an environment or a tool's cache, never work: by name, or by what is inside.
ENVIRONMENT_NAMES = {
    "node_modules/": "installed node packages",
    ".venv/": "a Python virtual environment",
    "venv/": "a Python virtual environment",
    ".tox/": "tox's environments",
    ".nox/": "nox's environments",
    ".direnv/": "direnv's environment",
    "__pycache__/": "Python's bytecode cache",
    ".pytest_cache/": "pytest's cache",
    ".mypy_cache/": "mypy's cache",
    ".ruff_cache/": "ruff's cache",
}
ENVIRONMENT_MARKERS = {
    "pyvenv.cfg": "a Python virtual environment",
    "conda-meta": "a conda environment",
}


BUILD_SUFFIXES = {
    ".egg-info/": "a package's build metadata (pip install -e)",
    ".dist-info/": "a package's install metadata",
}


def environment(root: Path, path: str) -> str:
    """What environment or set-up by-product an untracked folder holds (``.venv/``: a Python
    virtual environment; ``x.egg-info/``: ``pip install -e``'s metadata), ``""`` when none."""
    if not path.endswith("/"):
        return ""
    name = path.rstrip("/").rsplit("/", 1)[-1] + "/"
    if name in ENVIRONMENT_NAMES:
        return ENVIRONMENT_NAMES[name]
    for suffix, what in BUILD_SUFFIXES.items():
        if name.endswith(suffix) and len(name) > len(suffix):
            return what
    for marker, what in ENVIRONMENT_MARKERS.items():
        if (root / path / marker).exists():
            return what
    return ""


def _exclude_file(root: Path, common: Path) -> str:
    """``.git/info/exclude`` as the user can type it from the repository's root."""
    target = common / "info" / "exclude"
    try:
        return str(target.relative_to(root.resolve()))
    except ValueError:
        return str(target)


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


def keep_out_set_up(root: Path) -> tuple[str, ...]:
    """Untracked environments and build by-products (``.venv/``, ``x.egg-info/``) written to
    ``.git/info/exclude``, so a CI job's set-up is neither refused as uncommitted work nor
    committed with the agent's. For ``greenloop pr`` in a CI clone, never a user's work tree."""
    found = tuple(
        path
        for path, code in sorted(git.status_paths(root, untracked="normal").items())
        if code == "??" and environment(root, path)
    )
    if found:
        exclude = git.common_dir(root) / "info" / "exclude"
        exclude.parent.mkdir(parents=True, exist_ok=True)
        with exclude.open("a", encoding="utf-8") as file:
            file.write("".join(f"/{path}\n" for path in found))
    return found

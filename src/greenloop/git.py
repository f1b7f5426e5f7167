"""One small function per git command, all through process.run_command."""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from pathlib import Path

from greenloop.errors import FatalError
from greenloop.processes.process import ProcessResult, run_command

GIT_TIMEOUT_S = 120.0
# GIT_* variables that choose which config files git reads, never which repository it works on.
KEEP_GIT_VARS = frozenset({"GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"})
# A hooks directory that cannot hold hooks: no user hook runs on our own commits or checkouts.
NO_HOOKS = ("-c", "core.hooksPath=/dev/null")
# Diff headers name a non-ASCII path as itself (módulo.py), not git's "b/m\303\263dulo.py".
UNQUOTED = ("-c", "core.quotePath=false")


def no_git_env(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The caller's environment without inherited GIT_* variables (they would redirect git)."""
    env = {k: v for k, v in environ.items() if not k.startswith("GIT_") or k in KEEP_GIT_VARS}
    env.update({"GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "LC_ALL": "C"})
    return env


def git(
    root: Path,
    *args: str,
    check: bool = True,
    environ: Mapping[str, str] | None = None,
    git_env: Mapping[str, str] | None = None,
) -> ProcessResult:
    """``git_env``: GIT_* variables set on purpose (an identity, a date), kept after the inherited
    ones are dropped."""
    env = no_git_env(os.environ if environ is None else environ) | dict(git_env or {})
    result = run_command(
        ("git", *args), cwd=root, timeout_s=GIT_TIMEOUT_S, env=env, stop_escaped=False, shown=False
    )
    if check and result.exit_code != 0:
        detail = (result.stderr or result.stdout).strip().splitlines()
        # git's own reason, not the advice after it ("remove the file manually to continue.")
        why = next((line for line in detail if line.startswith(("fatal:", "error:"))), None)
        raise FatalError(
            f"git {args[0]} failed: {why or (detail[-1] if detail else result.exit_code)}"
        )
    return result


def get_root(cwd: Path) -> Path | None:
    result = git(cwd, "rev-parse", "--show-toplevel", check=False)
    return Path(result.stdout.strip()) if result.exit_code == 0 else None


def status_paths(root: Path, *, untracked: str = "all") -> dict[str, str]:
    """Changed and untracked paths -> their porcelain status (``M ``, ``??`` …).

    Edits inside a submodule are that repository's, which no ``add``/``reset`` here records or
    reverts: left out (``dirty_submodules`` names them); a submodule moved to a new commit is in.
    ``untracked="normal"``: an untracked folder is one entry (``.venv/``), as ``git status`` shows."""
    args = (
        "status",
        "--porcelain=v1",
        "-z",
        f"--untracked-files={untracked}",
        "--ignore-submodules=dirty",
    )
    out = git(root, *args).stdout
    entries: dict[str, str] = {}
    parts = out.split("\0")
    i = 0
    while i < len(parts):
        entry = parts[i]
        i += 1
        if len(entry) < 4:
            continue
        code, path = entry[:2], entry[3:]
        if code[0] in "RC":
            i += 1  # the rename's source follows
        entries[path] = code
    return entries


def dirty_submodules(root: Path) -> tuple[str, ...]:
    """Submodules whose work tree holds edits or untracked files (porcelain v2: ``S.M.``, ``S..U``)."""
    out = git(root, "status", "--porcelain=v2", "-z").stdout
    fields = [entry.split(" ", 8) for entry in out.split("\0") if entry.startswith("1 ")]
    return tuple(f[8] for f in fields if len(f) == 9 and f[2][0] == "S" and f[2][2:] != "..")


def discover(cwd: Path) -> tuple[Path, Path, Path] | None:
    """(work tree root, its git dir, the common git dir) as git would find them from ``cwd``,
    read from the files git reads instead of started as a process (the Stop hook: issue 16).

    None where git's own answer is needed: no ``.git`` above ``cwd``, or one this does not read
    (a bare repository, a ``.git`` file without ``gitdir:``)."""
    for folder in (cwd, *cwd.parents):
        git_dir = dot_git_dir(folder)
        if git_dir is not None:
            return folder, git_dir, _common_dir(git_dir)
        if (folder / ".git").exists():
            return None
    return None


def dot_git_dir(root: Path) -> Path | None:
    """The git dir ``root/.git`` names: itself, or the ``gitdir:`` of a worktree's ``.git`` file."""
    dot = root / ".git"
    if dot.is_dir():  # git takes a folder without HEAD for no repository, and looks further up
        return dot if (dot / "HEAD").is_file() else None
    try:
        text = dot.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not text.startswith("gitdir: "):
        return None
    git_dir = root / text.removeprefix("gitdir: ")  # an absolute path stays absolute
    return git_dir if git_dir.is_dir() else None


def _common_dir(git_dir: Path) -> Path:
    try:  # a linked worktree's git dir names the shared one
        shared = (git_dir / "commondir").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return git_dir
    return Path(os.path.normpath(git_dir / shared))


def status_for_key(root: Path, *, index_file: Path | None = None) -> ProcessResult:
    """``status --porcelain=v2 -z --branch`` of every changed and untracked path (issue 16).

    With ``index_file``, a private copy of the index, git may refresh and rewrite that copy, so
    racily clean entries are hashed once rather than on every call; the real index is never
    locked (the agent or the user may be running git)."""
    env = no_git_env()
    locks: tuple[str, ...] = ("--no-optional-locks",)
    if index_file is not None:
        env["GIT_INDEX_FILE"] = str(index_file)
        locks = ("-c", "core.splitIndex=false")  # the copy must not write shared index files
    args = (
        "status",
        "--porcelain=v2",
        "-z",
        "--branch",
        "--no-ahead-behind",
        "--untracked-files=all",
    )
    argv = ("git", *locks, *args, "--ignore-submodules=none", "--no-renames")
    return run_command(
        argv, cwd=root, timeout_s=GIT_TIMEOUT_S, env=env, stop_escaped=False, shown=False
    )


def ignored_paths(root: Path) -> tuple[str, ...]:
    """Untracked paths git ignores now; a wholly ignored directory as one ``dir/`` entry."""
    out = git(
        root, "ls-files", "--others", "--ignored", "--exclude-standard", "--directory", "-z"
    ).stdout
    return tuple(p for p in out.split("\0") if p)


def tracked_paths(root: Path) -> tuple[str, ...]:
    """Every file git tracks, as stored (``-z``: no quoting of unusual names)."""
    return tuple(p for p in git(root, "ls-files", "-z").stdout.split("\0") if p)


def tracked_symlinks(root: Path) -> dict[str, str]:
    """Each symlink git tracks -> the repository path it points to; a link that leaves the
    repository, or that is not on disk, is left out."""
    result = git(root, "ls-files", "-s", "-z", check=False)
    links: dict[str, str] = {}
    for entry in result.stdout.split("\0") if result.exit_code == 0 else ():
        meta, _, path = entry.partition("\t")
        if not meta.startswith("120000 "):
            continue
        try:
            target = os.readlink(root / path)
        except OSError:
            continue
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
        if not (posixpath.isabs(resolved) or resolved == ".." or resolved.startswith("../")):
            links[path] = resolved
    return links


def diff_head(root: Path, *, context: int = 0) -> str:
    """The uncommitted change against HEAD (tracked files), for anchoring the digest."""
    args = (
        "diff",
        f"-U{context}",
        "--no-color",
        "--no-ext-diff",
        "--src-prefix=a/",
        "--dst-prefix=b/",
    )
    result = git(root, *UNQUOTED, *args, "HEAD", check=False)
    return result.stdout if result.exit_code == 0 else ""


def git_dir(root: Path) -> Path:
    """This work tree's git directory (``.git``, or ``.git/worktrees/<name>`` in a worktree)."""
    return (root / git(root, "rev-parse", "--git-dir").stdout.strip()).resolve()


def common_dir(root: Path) -> Path:
    """The git directory shared by every worktree of the repository."""
    return (root / git(root, "rev-parse", "--git-common-dir").stdout.strip()).resolve()


def rev_parse(root: Path, rev: str) -> str | None:
    """The commit sha ``rev`` names, or None when it names none."""
    result = git(root, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
    return result.stdout.strip() if result.exit_code == 0 else None


def current_branch(root: Path) -> str | None:
    """The checked-out branch's short name; None when HEAD is detached."""
    result = git(root, "symbolic-ref", "--quiet", "--short", "HEAD", check=False)
    return result.stdout.strip() if result.exit_code == 0 else None


def config_value(root: Path, key: str, *, environ: Mapping[str, str] | None = None) -> str | None:
    result = git(root, "config", "--get", key, check=False, environ=environ)
    value = result.stdout.strip()
    return value if result.exit_code == 0 and value else None


def add_all(root: Path) -> None:
    """Stage every change, new file and deletion in the work tree (ignored files stay out)."""
    unborn = unborn_repos(root)
    pathspec = ("--", ":/", *(f":(exclude,literal){p}" for p in unborn)) if unborn else ()
    git(root, "add", "--all", *pathspec)


def unborn_repos(root: Path) -> tuple[str, ...]:
    """Untracked folders holding a repository with no commit yet (``git init`` run inside the
    tree): git cannot stage them, and would refuse the whole ``add``."""
    untracked = (p for p, code in status_paths(root).items() if code == "??" and p.endswith("/"))
    return tuple(p for p in untracked if rev_parse(root / p, "HEAD") is None)


def unstage(root: Path, paths: tuple[str, ...]) -> None:
    """Take paths back out of the index (new files become untracked again)."""
    git(root, "reset", "-q", "--", *paths)


def staged_paths(root: Path) -> tuple[str, ...]:
    out = git(root, "diff", "--cached", "--name-only", "--no-renames", "-z").stdout
    return tuple(p for p in out.split("\0") if p)


def commit(
    root: Path,
    message: str,
    *,
    identity: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> None:
    """Commit the index: hooks and signing skipped, ``identity`` filling missing user.* keys."""
    overrides = [arg for key, value in (identity or {}).items() for arg in ("-c", f"{key}={value}")]
    argv = (*NO_HOOKS, *overrides, "commit", "--quiet", "--no-verify", "--no-gpg-sign")
    git(root, *argv, "--cleanup=verbatim", "-m", message, environ=environ)


def rev_list(root: Path, revision_range: str) -> tuple[str, ...]:
    """Commits in ``revision_range``, oldest first."""
    out = git(root, "rev-list", "--reverse", revision_range).stdout
    return tuple(out.split())


def log_messages(root: Path, base: str, head: str) -> tuple[str, ...]:
    """Full messages of ``base..head``, oldest first."""
    out = git(root, "log", "--reverse", "--format=%B%x00", f"{base}..{head}").stdout
    return tuple(m.strip() for m in out.split("\0") if m.strip())


def diff_names(root: Path, base: str, head: str) -> tuple[str, ...]:
    """Paths that differ between two commits; a rename counts as a deletion plus an addition."""
    out = git(root, "diff", "--name-only", "--no-renames", "-z", base, head).stdout
    return tuple(p for p in out.split("\0") if p)


def diff_commits(root: Path, base: str, head: str, *, context: int = 3) -> str:
    """The patch from ``base`` to ``head``: no colour, no external diff, stable a/ b/ prefixes."""
    args = ("diff", f"-U{context}", "--no-color", "--no-ext-diff", "--no-textconv")
    return git(root, *UNQUOTED, *args, "--src-prefix=a/", "--dst-prefix=b/", base, head).stdout


def update_ref(root: Path, ref: str, sha: str, *, reason: str = "greenloop") -> None:
    git(root, *NO_HOOKS, "update-ref", "-m", reason, ref, sha)


def is_ancestor(root: Path, ancestor: str, descendant: str) -> bool:
    result = git(root, "merge-base", "--is-ancestor", ancestor, descendant, check=False)
    return result.exit_code == 0


def reset_hard(root: Path, sha: str) -> None:
    """Move the branch and the tree to ``sha``. Callers commit everything first."""
    git(root, *NO_HOOKS, "reset", "--quiet", "--hard", sha)


def reset_soft(root: Path, sha: str) -> None:
    git(root, *NO_HOOKS, "reset", "--quiet", "--soft", sha)


def checkout(root: Path, branch: str) -> None:
    git(root, *NO_HOOKS, "checkout", "--quiet", branch)


def checkout_here(root: Path, branch: str) -> None:
    """Point ``branch`` at HEAD and check it out; the tree is left as it is."""
    git(root, *NO_HOOKS, "checkout", "--quiet", "-B", branch)


def create_branch_at(root: Path, branch: str, sha: str) -> None:
    """Check out a new branch at ``sha`` (for a branch the agent deleted)."""
    git(root, *NO_HOOKS, "checkout", "--quiet", "-b", branch, sha)

"""A fresh clone per task under ``DIR/work/<id>/``; the source repository is only ever read.

Local repositories are cloned with ``--shared`` (their objects are borrowed, not copied); a Ray
worker gets a local repository as a ``git bundle`` instead, so no disk is shared. A workspace left
by an earlier attempt is moved aside, never deleted.
"""

from __future__ import annotations

import os
from pathlib import Path

from greenloop import git
from greenloop.batch.tasks import Task
from greenloop.errors import FatalError
from greenloop.processes.process import ProcessResult, build_env, run_command

BRANCH = "greenloop-batch"
SETUP_TIMEOUT_S = 1800.0


def set_aside(path: Path, aside_root: Path) -> Path | None:
    """Move an earlier attempt's directory under ``aside_root`` as ``<name>.<n>``; None if absent."""
    if not path.exists():
        return None
    aside_root.mkdir(parents=True, exist_ok=True)
    n = 1
    while (aside_root / f"{path.name}.{n}").exists():
        n += 1
    target = aside_root / f"{path.name}.{n}"
    os.replace(path, target)
    return target


def create_bundle(repo: Path, dest: Path) -> Path:
    """Every ref of ``repo`` (and its HEAD) in one file a worker can clone from."""
    git.git(repo, "bundle", "create", str(dest), "HEAD", "--all")
    return dest


def clone_task(task: Task, dest: Path, *, bundle: Path | None = None) -> str:
    """Clone the task's repository into ``dest`` on a branch at its ref; return that commit."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    extra: tuple[str, ...] = ()
    if bundle is not None:
        source = str(bundle)
    elif task.is_local:
        source, extra = task.repo, ("--shared",)
    else:
        source = task.repo
    git.git(dest.parent, "clone", "-q", "--no-checkout", *extra, source, str(dest))
    sha = _resolve(dest, task.ref)
    git.git(dest, "checkout", "-q", "-B", BRANCH, sha)
    return sha


def _resolve(root: Path, ref: str | None) -> str:
    candidates = [f"origin/{ref}", ref] if ref else ["HEAD"]
    for candidate in candidates:
        sha = git.rev_parse(root, f"{candidate}^{{commit}}")
        if sha:
            return sha
    raise FatalError(f"ref {ref!r} not found in the repository")


def run_setup(
    task: Task, root: Path, *, timeout_s: float = SETUP_TIMEOUT_S
) -> ProcessResult | None:
    """Run the task's setup once; what it leaves untracked is excluded from the loop's view."""
    if not task.setup:
        return None
    result = run_command(task.setup, cwd=root, timeout_s=timeout_s, env=build_env())
    if result.exit_code == 0:
        _exclude_untracked(root)
    return result


def _exclude_untracked(root: Path) -> None:
    out = git.git(root, "status", "--porcelain=v1", "-z", "--untracked-files=normal").stdout
    untracked = sorted(e[3:] for e in out.split("\0") if e.startswith("?? "))
    if not untracked:
        return
    exclude = git.git_dir(root) / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    lines = "".join(f"/{p}\n" for p in untracked)
    with exclude.open("a", encoding="utf-8") as fh:
        fh.write("# left by the batch task's setup\n" + lines)

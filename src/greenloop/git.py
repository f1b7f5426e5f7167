"""One small function per git command, all through process.run_command."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from greenloop.errors import FatalError
from greenloop.process import ProcessResult, run_command

GIT_TIMEOUT_S = 120.0


def no_git_env(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The caller's environment without inherited GIT_* variables (they would redirect git)."""
    env = {k: v for k, v in environ.items() if not k.startswith("GIT_")}
    env.update({"GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "LC_ALL": "C"})
    return env


def git(root: Path, *args: str, check: bool = True) -> ProcessResult:
    result = run_command(("git", *args), cwd=root, timeout_s=GIT_TIMEOUT_S, env=no_git_env())
    if check and result.exit_code != 0:
        detail = (result.stderr or result.stdout).strip().splitlines()
        raise FatalError(f"git {args[0]} failed: {detail[-1] if detail else result.exit_code}")
    return result


def get_root(cwd: Path) -> Path | None:
    result = git(cwd, "rev-parse", "--show-toplevel", check=False)
    return Path(result.stdout.strip()) if result.exit_code == 0 else None


def status_paths(root: Path) -> dict[str, str]:
    """Changed and untracked paths -> their porcelain status (``M ``, ``??`` …)."""
    out = git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all").stdout
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


def diff_head(root: Path, *, context: int = 0) -> str:
    """The uncommitted change against HEAD (tracked files), for anchoring the digest."""
    result = git(root, "diff", f"-U{context}", "--no-color", "--no-ext-diff", "HEAD", check=False)
    return result.stdout if result.exit_code == 0 else ""

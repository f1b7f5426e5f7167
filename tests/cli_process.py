"""greenloop and git as a user runs them: real subprocesses, for the end-to-end tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from limits import hang
from process_state import state


def greenloop(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m greenloop ARGS`` started in ``cwd``; never raises on its exit code."""
    return subprocess.run(
        [sys.executable, "-m", "greenloop", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=hang(120),
        check=False,
    )


def git(root: Path, *args: str) -> str:
    """git's stdout; raises when git fails."""
    out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return out.stdout


def alive(pid: int) -> bool:
    """Running: not gone, and not a zombie waiting to be reaped."""
    found = state(pid)
    return found is not None and found[:1] not in "ZX"

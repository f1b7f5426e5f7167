"""The environments real users have: started from a subdirectory, hostile git configuration, a
verifier or an agent that misbehaves. Real git repos in tmp dirs, real ``greenloop`` processes."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from test_claude_hook import CALC_BUG, PYTEST

SECRET_TESTS = (
    "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5, 'token SEKRET12345'\n"
)
CONFIG = (
    '[tool.greenloop]\nmax_iters = 1\nredact = ["SEKRET[0-9]+"]\n'
    f'[[tool.greenloop.stage]]\nname = "mytests"\nrun = "{PYTEST}"\n'
)


def greenloop(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "greenloop", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def git(root: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return out.stdout


def test_run_from_a_subdirectory_reads_the_configuration_of_the_repository_it_runs_on(
    make_repo: Callable[..., Path],
) -> None:
    root = make_repo({"calc.py": CALC_BUG, "test_calc.py": SECRET_TESTS, "pyproject.toml": CONFIG})
    (root / "docs").mkdir()
    out = greenloop(root / "docs", "run", "--agent", "true", "--yes")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "mytests" in out.stderr  # the configured stage, not a detected one
    assert "iter 1/1 " in out.stderr
    records = "".join(p.read_text() for p in (root / ".git" / "greenloop").rglob("*.md"))
    assert "SEKRET12345" not in out.stdout + out.stderr + records

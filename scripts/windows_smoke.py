"""The Windows smoke test (CI's windows job; also run on Linux by tests/test_ci_workflow.py).

greenloop runs verifiers and agents through ``sh -c``. On a machine without a POSIX shell on
PATH (Windows outside WSL and Git Bash) every command that runs one must exit 2 with one line
that says what it needs; a command that runs none (``detect``) still works. Exits 0 when so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def greenloop(repo: Path, path: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": path}
    return subprocess.run(
        [sys.executable, "-m", "greenloop", "-C", str(repo), *args],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def main() -> int:
    git = shutil.which("git")
    if git is None:
        print("windows_smoke: git is not on PATH", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        repo, bin_dir = Path(tmp) / "repo", Path(tmp) / "bin"
        subprocess.run([git, "init", "-q", str(repo)], check=True)
        (repo / "pyproject.toml").write_text('[project]\nname = "smoke"\nversion = "0"\n')
        bin_dir.mkdir()
        no_shell = os.pathsep.join([str(bin_dir), str(Path(git).parent)])
        if shutil.which("sh", path=no_shell):  # Git for Windows keeps sh.exe beside git.exe
            no_shell = str(bin_dir)
        checked = greenloop(repo, no_shell, "check", "--", "python", "-c", "pass")
        said = checked.stderr
        failures = []
        if checked.returncode != 2 or said.count("\n") != 1 or "no `sh` is on PATH" not in said:
            failures.append(f"check without sh: exit {checked.returncode}, stderr {said!r}")
        detected = greenloop(repo, no_shell, "--version")
        if detected.returncode != 0:
            failures.append(f"--version without sh: exit {detected.returncode} {detected.stderr!r}")
    for failure in failures:
        print(f"windows_smoke: {failure}", file=sys.stderr)
    if not failures:
        print("windows_smoke: ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""The platforms greenloop supports (issue 41): what the README and the package metadata state,
held to what the code checks; a machine without a POSIX shell gets one line, exit 2."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from greenloop.cli.entry import NEEDS_SHELL, shell_missing
from limits import hang

ROOT = Path(__file__).resolve().parents[1]


def test_readme_and_classifiers_claim_only_what_is_shown() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    systems = {c for c in meta["classifiers"] if c.startswith("Operating System")}
    assert systems == {"Operating System :: POSIX :: Linux"}  # macOS: not proven on a Mac yet
    section = (ROOT / "README.md").read_text().split("## Platforms", 1)[1].split("\n## ", 1)[0]
    assert "Linux" in section
    assert "macOS" in section
    assert "WSL" in section
    assert "Git Bash" in section


@pytest.mark.parametrize("command", sorted(NEEDS_SHELL))
def test_every_command_that_runs_a_shell_says_in_one_line_that_sh_is_missing(
    command: str, tmp_path: Path
) -> None:
    said = shell_missing(command, str(tmp_path))
    assert said.startswith(f"greenloop {command} runs verifiers and agents through a POSIX shell")
    assert "\n" not in said
    assert shell_missing(command, os.pathsep.join([str(tmp_path), "/bin", "/usr/bin"])) == ""


def test_a_command_that_runs_no_shell_does_not_need_one(tmp_path: Path) -> None:
    assert shell_missing("detect", str(tmp_path)) == ""
    assert shell_missing("report", str(tmp_path)) == ""


def test_check_without_sh_on_path_exits_2_with_one_line(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"  # git and python, but no sh: as a Windows machine outside WSL
    bin_dir.mkdir()
    for tool in ("git",):
        found = shutil.which(tool)
        assert found is not None
        (bin_dir / tool).symlink_to(found)
    subprocess.run(["git", "init", "-q", str(tmp_path / "repo")], check=True)
    out = subprocess.run(
        [sys.executable, "-m", "greenloop", "-C", str(tmp_path / "repo"), "check", "--", "true"],
        env={**os.environ, "PATH": str(bin_dir)}, capture_output=True, text=True,
        timeout=hang(120), check=False,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1
    assert "no `sh` is on PATH: on Windows run it in WSL, or in Git Bash" in out.stderr

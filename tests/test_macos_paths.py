"""What differs on macOS where greenloop compares a path or names a tool, run here on Linux: the
temp folders behind a symlink (``/tmp`` and ``$TMPDIR`` under ``/var/folders`` are
``/private/…``), ``python3`` without ``python``, Homebrew's prefix. (greenloop itself runs no
``sed``, so BSD sed's ``-i ''`` never arises; the process table's ``ps`` and ``lsof`` options are
held in test_process_table.py.)"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from cli_process import greenloop
from greenloop.digest import normalize
from greenloop.digest.frames import is_project
from greenloop.digest.layout import shown_command
from greenloop.parsers import ParserInput, parse_output
from greenloop.parsers.path_spellings import root_aliases, unaliased
from limits import hang

LINT = (
    'echo "$PWD/pkg/mod.py:1:1: error: said by the logical path [rule]"\n'
    'echo "$(pwd -P)/pkg/mod.py:1:2: error: said by the real path [rule]"\n'
    "exit 1\n"
)


def macos_temp(tmp_path: Path) -> tuple[Path, Path]:
    """``var`` -> ``private/var``, as on a Mac: the project's real folder and its logical one."""
    real = tmp_path / "private" / "var" / "folders" / "T" / "proj"
    real.mkdir(parents=True)
    (tmp_path / "var").symlink_to(tmp_path / "private" / "var")
    return real, tmp_path / "var" / "folders" / "T" / "proj"


def test_a_project_reached_through_a_symlinked_temp_folder_is_one_project_in_either_spelling(
    tmp_path: Path,
) -> None:
    real, logical = macos_temp(tmp_path)
    (real / "pkg").mkdir()
    (real / "pkg" / "mod.py").write_text("x = 1\n")
    (real / "lint.sh").write_text(LINT)
    (real / "pyproject.toml").write_text(
        '[[tool.greenloop.stage]]\nname = "lint"\nrun = "sh lint.sh"\n'
    )
    for args in (["init", "-q", "-b", "main"], ["add", "-A"]):
        subprocess.run(["git", *args], cwd=real, check=True)
    subprocess.run(
        ["git", "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "i"],
        cwd=real,
        check=True,
    )
    env = {**os.environ, "PWD": str(logical)}  # the user's shell cd'd by the logical path
    out = subprocess.run(
        [sys.executable, "-m", "greenloop", "check"],
        cwd=logical,
        env=env,
        capture_output=True,
        text=True,
        timeout=hang(120),
        check=False,
    )
    assert out.returncode == 1, out.stdout + out.stderr
    assert "2 problems in 1 file" in out.stdout
    assert "FIRST ERROR: pkg/mod.py:1:1" in out.stdout
    assert "pkg/mod.py:1:2" in out.stdout
    assert "/var/folders" not in out.stdout


def test_the_root_s_logical_spellings_are_its_aliases_from_its_folder_or_below(
    tmp_path: Path,
) -> None:
    real, logical = macos_temp(tmp_path)
    (real / "sub").mkdir()
    assert root_aliases(str(real), str(logical)) == (str(logical),)
    assert root_aliases(str(real), str(logical / "sub")) == (str(logical),)
    assert root_aliases(str(real), str(real)) == ()
    assert root_aliases(str(real), str(tmp_path / "var")) == ()  # above the root: not it
    assert root_aliases(str(real), "") == ()


def test_macos_private_temp_folders_have_their_short_spelling_as_an_alias() -> None:
    macos = {"/var/folders/T/proj": "/private/var/folders/T/proj", "/tmp/p": "/private/tmp/p"}
    resolve: Callable[[str], str] = lambda path: macos.get(path, path)  # noqa: E731
    assert root_aliases("/private/var/folders/T/proj", "", resolve) == ("/var/folders/T/proj",)
    assert root_aliases("/private/tmp/p", "", resolve) == ("/tmp/p",)
    assert root_aliases("/private/tmp/p", "", lambda path: path) == ()  # no symlink: none


def test_output_naming_the_root_by_an_alias_is_read_as_naming_the_root() -> None:
    said = "/tmp/p/pkg/mod.py:1:1: error: a\n/private/tmp/p/pkg/mod.py:2:1: error: b\n"
    inp = ParserInput(stdout=said, merged=said, root="/private/tmp/p", root_aliases=("/tmp/p",))
    assert unaliased(inp).stdout == said.replace(
        "/tmp/p/pkg/mod.py:1", "/private/tmp/p/pkg/mod.py:1"
    )
    result = parse_output(inp)
    assert [(f.file, f.line) for f in result.failures] == [("pkg/mod.py", 1), ("pkg/mod.py", 2)]


def test_a_failure_in_a_macos_temp_folder_has_one_signature_in_either_spelling() -> None:
    short = normalize("FileNotFoundError: /var/folders/ab/xy/T/tmpq1/data.json")
    assert short == normalize("FileNotFoundError: /private/var/folders/ab/xy/T/tmpq2/data.json")
    assert "<tmp>" in short


def test_homebrew_interpreters_are_shown_by_name_and_their_frames_are_not_the_project() -> None:
    root = Path("/Users/me/proj")
    assert shown_command("/opt/homebrew/bin/python3 -m pytest -q", root) == "python3 -m pytest -q"
    framework = (
        "/opt/homebrew/Cellar/python@3.12/3.12.4/Frameworks/Python.framework/Versions/3.12"
        "/lib/python3.12/unittest/case.py"
    )
    assert not is_project(framework, root)
    assert not is_project("/opt/homebrew/lib/node_modules/jest/bin/jest.js", root)
    assert is_project("/Users/me/proj/pkg/mod.py", root)


def test_check_on_a_machine_with_python3_and_no_python_detects_and_runs_python3(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    bin_dir = tmp_path / "bin"  # as a Mac: python3 (Xcode's or Homebrew's), no `python`
    bin_dir.mkdir()
    for tool in ("git", "sh"):
        found = shutil.which(tool)
        assert found is not None
        (bin_dir / tool).symlink_to(found)
    (bin_dir / "python3").write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    (bin_dir / "python3").chmod(0o755)
    root = make_repo(
        {
            "calc.py": "def add(a, b):\n    return a - b\n",
            "test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
            "pyproject.toml": '[project]\nname = "calc"\nversion = "0"\n[tool.pytest.ini_options]\n',
        }
    )
    env = {**os.environ, "PATH": str(bin_dir)}
    detected = greenloop(root, "detect", env=env)
    assert "python3 -m pytest" in detected.stdout, detected.stdout + detected.stderr
    out = greenloop(root, "check", env=env)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "FIRST FAILING TEST: test_calc.py::test_add" in out.stdout

"""Issue 12: a malformed configuration is exit 2 with its key path, never an internal error (70)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from greenloop.cli import main

BAD_CONFIGS = {
    "tool-greenloop-int": ("pyproject.toml", "[tool]\ngreenloop = 5\n", "tool.greenloop"),
    "tool-greenloop-str": ("pyproject.toml", '[tool]\ngreenloop = "x"\n', "tool.greenloop"),
    "top-level-tool-int": ("pyproject.toml", "tool = 5\n", "tool"),
    "deep-arrays": ("pyproject.toml", "x = " + "[" * 5000 + "]" * 5000 + "\n", "nested"),
    "stage-timeout-nan": (
        "greenloop.toml",
        '[[stage]]\nname = "t"\nrun = "true"\ntimeout = nan\n',
        "stage[0].timeout",
    ),
    "stage-timeout-inf": (
        "greenloop.toml",
        '[[stage]]\nname = "t"\nrun = "true"\ntimeout = inf\n',
        "stage[0].timeout",
    ),
    "stage-timeout-negative": (
        "greenloop.toml",
        '[[stage]]\nname = "t"\nrun = "true"\ntimeout = -3\n',
        "stage[0].timeout",
    ),
    "stage-timeout-bool": (
        "greenloop.toml",
        '[[stage]]\nname = "t"\nrun = "true"\ntimeout = true\n',
        "stage[0].timeout",
    ),
    "timeout-inf": ("greenloop.toml", "timeout = inf\n", "timeout"),
    "redact-bad-regex": ("greenloop.toml", 'redact = ["(unclosed"]\n', "redact"),
    "redact-not-a-list": ("greenloop.toml", 'redact = "x"\n', "redact"),
}


@pytest.mark.parametrize("case", sorted(BAD_CONFIGS))
def test_config_reports_a_malformed_file_with_its_key_path_and_exit_2(
    case: str,
    make_repo: Callable[..., Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    name, text, key = BAD_CONFIGS[case]
    root = make_repo({name: text, "test_a.py": "def test_a():\n    pass\n"})
    code = main(["-C", str(root), "check", "--", "true"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert key in err


def test_check_survives_a_committed_symlink_loop_at_the_repo_root(
    make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_repo({"pyproject.toml": '[project]\nname = "x"\n', "test_a.py": "x = 1\n"})
    os.symlink("b", root / "a")
    os.symlink("a", root / "b")
    code = main(["-C", str(root), "check", "--", "true"])
    assert code == 0, capsys.readouterr().err

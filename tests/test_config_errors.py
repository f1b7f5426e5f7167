"""Issue 12: a malformed configuration is exit 2 with its key path, never an internal error (70)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from greenloop.cli.entry import main
from limits import hang

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


def test_config_is_read_again_from_the_toml_cache_until_the_file_changes(tmp_path: Path) -> None:
    """Issue 16: the parsed file is reused while unchanged; any rewrite, even same-sized, is seen."""
    root = tmp_path / "repo"
    root.mkdir()
    config = root / "pyproject.toml"
    config.write_text("[project]\nwhen = 1979-05-27\n[tool.greenloop]\nmax_iters = 3\n")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    probe = (
        "import sys; from pathlib import Path; from greenloop.config import load_config; "
        "c = load_config(Path(sys.argv[1])); print(c.max_iters, 'tomllib' in sys.modules)"
    )

    def read() -> str:
        argv = [sys.executable, "-c", probe, str(root)]
        out = subprocess.run(
            argv, env=env, capture_output=True, text=True, check=True, timeout=hang(60)
        )
        return out.stdout.strip()

    assert read() == "3 True"
    assert read() == "3 True"  # a date: JSON can't hold it, so it is parsed every time
    config.write_text('[project]\nwhen = "1979-05-27"\n[tool.greenloop]\nmax_iters = 3\n')
    assert read() == "3 True"
    assert read() == "3 False"  # unchanged: parsed once, then read from the cache
    config.write_text(config.read_text().replace("3", "4"))  # same size
    assert read() == "4 True"
    assert read() == "4 False"

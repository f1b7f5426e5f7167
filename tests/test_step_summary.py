"""``greenloop check`` appends its Markdown to $GITHUB_STEP_SUMMARY in GitHub Actions."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from limits import hang

PY = sys.executable
CALC_BUG = "def add(a, b):\n    return a - b\n"
TESTS = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
CONFIG = '[tool.greenloop]\n[[tool.greenloop.stage]]\nname = "test"\nrun = "{py} -m pytest -q -p no:cacheprovider"\n'


def check(root: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PY, "-m", "greenloop", "-C", str(root), "check", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=hang(120),
        env=env,
    )


def test_check_appends_markdown_to_the_step_summary(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_repo(
        {"calc.py": CALC_BUG, "test_calc.py": TESTS, "pyproject.toml": CONFIG.format(py=PY)}
    )
    summary = tmp_path / "summary.md"
    summary.write_text("## earlier step\n")
    out = check(root, {**os.environ, "GITHUB_STEP_SUMMARY": str(summary)}, "--format", "github")
    assert out.returncode == 1, out.stderr
    text = summary.read_text()
    assert text.startswith("## earlier step\n")  # appended, never overwritten
    assert "### ❌ greenloop check: FAILED" in text
    assert "| test | `" in text
    assert "failed (exit 1)" in text
    assert "test_calc.py::test_add" in text
    assert "```text\n" in text


def test_check_without_the_variable_writes_no_summary(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_repo(
        {"calc.py": CALC_BUG, "test_calc.py": TESTS, "pyproject.toml": CONFIG.format(py=PY)}
    )
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    out = check(root, env)
    assert out.returncode == 1
    assert "### " not in out.stdout
    assert not list(tmp_path.rglob("*.md"))

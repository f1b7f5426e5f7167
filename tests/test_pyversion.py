"""A project's requires-python against the Python its tests ran under (the pytest plugin says)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cli_process import git, greenloop
from greenloop.verify.pyversion import requires_python, satisfies


@pytest.mark.parametrize(
    ("python", "spec", "ok"),
    [
        ("3.11.7", ">=3.12", False),
        ("3.12.0", ">=3.12", True),
        ("3.11.7", ">=3.9", True),
        ("3.11.7", ">=3.8, <3.11", False),
        ("3.11.7", ">=3.8,<4", True),
        ("3.11.7", "~=3.12", False),
        ("3.12.3", "~=3.12", True),
        ("3.11.7", "==3.11.*", True),
        ("3.11.7", "==3.10.*", False),
        ("3.11.7", "!=3.11.*", False),
        ("3.11.7", ">3.11", True),  # 3.11.7 is above 3.11(.0)
        ("3.11.7", ">=3.11.8", False),
        ("3.11.7", ">=3.12; unknown marker", True),  # what it cannot read never decides
    ],
)
def test_requires_python_clauses_decide_as_pep_440_reads_them(
    python: str, spec: str, ok: bool
) -> None:
    assert satisfies(python, spec) is ok


def test_requires_python_is_read_from_the_project_table() -> None:
    text = '[project]\nname = "x"\nrequires-python = ">=3.12"\n[tool.x]\n'
    assert requires_python(text) == ">=3.12"
    assert requires_python('[project]\nname = "x"\n') == ""


def _project(root: Path, requires: str) -> None:
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "p"\nversion = "0"\nrequires-python = "{requires}"\n'
    )
    (root / "test_p.py").write_text("def test_p():\n    assert 1 + 1 == 3\n")
    git(root, "init", "-q")


def test_a_suite_failing_under_a_python_the_project_does_not_support_is_an_environment_failure(
    tmp_path: Path,
) -> None:
    # a project on 3.12 syntax checked with a 3.11 interpreter fails in its own code; the agent
    # must not be sent to rewrite it for a Python it does not support
    _project(tmp_path, ">=3.99")
    out = greenloop(tmp_path, "check", "--format", "json", "--", sys.executable, "-m", "pytest")
    data = json.loads(out.stdout)
    assert data["verdict"] == "env_failure", data["digest"]
    running = ".".join(map(str, sys.version_info[:3]))
    assert f"the tests ran under Python {running}" in data["digest"]
    assert "requires-python = '>=3.99'" in data["digest"]


def test_a_suite_failing_under_a_supported_python_is_still_the_codes_failure(
    tmp_path: Path,
) -> None:
    _project(tmp_path, ">=3.8")
    out = greenloop(tmp_path, "check", "--format", "json", "--", sys.executable, "-m", "pytest")
    assert json.loads(out.stdout)["verdict"] == "failed"

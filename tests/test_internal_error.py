"""pytest's INTERNALERROR (exit 3): whose code raised it decides the verdict (issue 26).

An exception that escapes pytest's session is printed line by line after ``INTERNALERROR> ``. When
its deepest frame outside the standard library is the repository's own file (a project module that
raises SystemExit at import, the project's own plugin or conftest hook) the code failed, and the
agent that wrote it must be told where; pytest's, a plugin's or a library's frame is the
environment's. Real runs: the conformance corpus's cases (mccabe, pytest-mock; facts from pytest's
own ``pytest_internalerror`` hook, scripts/conformance/glreal_internalerror.py) and pytest itself
in a temporary directory.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from greenloop.parsers import ParserInput, parse_output
from greenloop.processes.process import run_command
from greenloop.verify.classify import Verdict, classify
from test_conformance import check

REAL = Path(__file__).parent / "resources" / "real"


def _case(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((REAL / name / "case.json").read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize(
    ("name", "error", "frame"),
    [
        # mccabe's `if __name__ == '__main__':` flipped: main() parses pytest's argv at import
        ("pytest/mccabe-1", "SystemExit: 2", "at mccabe.py:325 in main"),
        # pytest-mock's own pytest_configure (its pytest11 entry point, installed editable)
        ("pytest/pytest-mock-1", "NameError: name 'get_mock_moduel' is not defined",
         "at src/pytest_mock/plugin.py:653 in wrap_assert_methods"),
    ],
)  # fmt: skip
def test_an_internalerror_raised_by_the_projects_own_code_is_the_codes_failure_at_its_frame(
    name: str, error: str, frame: str
) -> None:
    data = _case(name)
    assert data["exit_code"] == 3
    out = check(data)
    assert out["verdict"] == "failed", out["digest"]
    assert error in out["digest"]
    assert frame in out["digest"], out["digest"]
    assert "INTERNALERROR" in out["digest"]
    assert "Not sent to the agent" not in out["digest"]


def _pytest(tmp_path: Path, env: dict[str, str]) -> Verdict:
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    run = run_command(argv, cwd=tmp_path / "proj", timeout_s=120, env={**os.environ, **env})
    assert run.exit_code == 3, run.merged
    assert "INTERNALERROR> " in run.merged
    root = str(tmp_path / "proj")
    parsed = parse_output(
        ParserInput(
            argv=run.argv, exit_code=run.exit_code, stdout=run.stdout, stderr=run.stderr,
            merged=run.merged, root=root,
        )
    )  # fmt: skip
    return classify(run, parsed, command=" ".join(argv), repo_modules={"pkg"}, root=root).verdict


def test_an_internalerror_raised_inside_an_installed_plugin_stays_an_environment_failure(
    tmp_path: Path,
) -> None:
    plugins = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    plugins.mkdir(parents=True)
    (plugins / "brokenplugin.py").write_text(
        "def pytest_collection_modifyitems(items):\n    raise RuntimeError('plugin bug')\n"
    )
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "test_it.py").write_text("def test_it():\n    assert True\n")
    env = {"PYTHONPATH": str(plugins), "PYTEST_PLUGINS": "brokenplugin", "PYTEST_ADDOPTS": ""}
    assert _pytest(tmp_path, env) is Verdict.ENV_FAILURE


def test_a_project_module_raising_systemexit_at_import_under_pytest_is_the_codes_failure(
    tmp_path: Path,
) -> None:
    (tmp_path / "proj" / "pkg").mkdir(parents=True)
    (tmp_path / "proj" / "pkg" / "__init__.py").write_text("raise SystemExit('no config')\n")
    (tmp_path / "proj" / "test_it.py").write_text("import pkg\n\ndef test_it():\n    pass\n")
    assert _pytest(tmp_path, {"PYTEST_ADDOPTS": ""}) is Verdict.FAILED


def test_an_internalerror_a_passing_test_prints_leaves_the_run_green(tmp_path: Path) -> None:
    # a plugin's suite checks what its inner sessions print; with -s that reaches the output
    shown = [ln for ln in _case("pytest/mccabe-1")["stdout"].splitlines() if "INTERNALERROR>" in ln]
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "test_it.py").write_text(
        f"TEXT = {chr(10).join(shown)!r}\n\ndef test_it():\n    print(TEXT)\n"
    )
    argv = [sys.executable, "-m", "pytest", "-s", "-p", "no:cacheprovider"]
    root = tmp_path / "proj"
    run = run_command(argv, cwd=root, timeout_s=120, env={**os.environ, "PYTEST_ADDOPTS": ""})
    assert run.exit_code == 0, run.merged
    assert "INTERNALERROR> SystemExit: 2" in run.merged
    parsed = parse_output(
        ParserInput(
            argv=run.argv, exit_code=0, stdout=run.stdout, stderr=run.stderr,
            merged=run.merged, root=str(root),
        )
    )  # fmt: skip
    judged = classify(run, parsed, command=" ".join(argv), root=str(root))
    assert judged.verdict is Verdict.GREEN, judged

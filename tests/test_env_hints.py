"""Environment failures name the right tool, and a package manager refusing to run is one (issue 10).

Real processes: a configured shell stage, ``npm test`` whose script calls a missing package manager,
and corepack refusing a project pinned to another package manager.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from limits import hang

MISSING = "greenloop-missing-tool"


def _check(root: Path, *command: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    argv = [sys.executable, "-m", "greenloop", "check", "--format", "json", *command]
    out = subprocess.run(
        argv,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=hang(120),
        check=False,
        env={**os.environ, **(env or {})},
    )
    data: dict[str, Any] = json.loads(out.stdout)
    return data


def test_env_hint_names_the_missing_tool_of_a_configured_shell_stage_not_sh(tmp_path: Path) -> None:
    stage = f'[[tool.greenloop.stage]]\nname = "format"\nrun = "{MISSING} format ."\n'
    (tmp_path / "pyproject.toml").write_text(stage)
    data = _check(tmp_path)
    assert data["verdict"] == "env_failure"
    assert f"Install `{MISSING}`" in data["digest"], data["digest"]
    assert "Install `sh`" not in data["digest"]


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_env_hint_names_the_package_manager_an_npm_script_could_not_find(tmp_path: Path) -> None:
    scripts = {"test": f"{MISSING} run unit"}
    (tmp_path / "package.json").write_text(json.dumps({"name": "x", "scripts": scripts}))
    data = _check(tmp_path, "--", "npm", "test")
    assert data["verdict"] == "env_failure"
    assert f"Install `{MISSING}`" in data["digest"], data["digest"]
    assert "Install `npm`" not in data["digest"]


@pytest.mark.skipif(shutil.which("corepack") is None, reason="corepack is not installed")
def test_package_manager_refusing_a_pinned_project_is_an_environment_failure(
    tmp_path: Path,
) -> None:
    package = {"name": "x", "packageManager": "yarn@3.6.0", "scripts": {"test": "node -e 0"}}
    (tmp_path / "package.json").write_text(json.dumps(package))
    data = _check(tmp_path, "--", "corepack", "pnpm", "test", env={"COREPACK_ENABLE_NETWORK": "0"})
    assert data["verdict"] == "env_failure", data["digest"]
    assert "package manager refused" in data["digest"]
    assert data["exit_code"] == 3


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
@pytest.mark.parametrize(
    ("lockfile", "manager"), [(None, "npm"), ("pnpm-lock.yaml", "pnpm"), ("yarn.lock", "yarn")]
)
def test_env_hint_says_install_the_dependencies_when_a_fresh_clone_has_no_node_modules(
    tmp_path: Path, lockfile: str | None, manager: str
) -> None:
    # vary, camelcase … cloned and checked before `npm install`: "sh: 1: mocha: not found"
    manifest = {"name": "x", "scripts": {"test": f"{MISSING} --bail"}}
    manifest["devDependencies"] = {MISSING: "^1.0.0"}
    (tmp_path / "package.json").write_text(json.dumps(manifest))
    if lockfile:
        (tmp_path / lockfile).write_text("")
    data = _check(tmp_path, "--", "npm", "test")
    assert data["verdict"] == "env_failure"
    assert f"node_modules is missing here: run `{manager} install`" in data["digest"]
    (tmp_path / "node_modules").mkdir()  # installed, but not this one
    data = _check(tmp_path, "--", "npm", "test")
    assert (
        f"`{MISSING}` is in package.json but not installed: run `{manager} install`"
        in (data["digest"])
    )


@pytest.mark.skipif(
    shutil.which("npm", path="/usr/bin:/bin") is None or shutil.which("yarn", path="/usr/bin:/bin"),
    reason="needs npm, and no yarn, in /usr/bin:/bin",
)
def test_a_fresh_clone_locked_by_yarn_without_yarn_says_install_yarn_then_yarn_install(
    tmp_path: Path,
) -> None:
    # tiny-invariant: "test": "yarn jest", a yarn.lock, cloned onto a machine without yarn
    manifest = {"name": "x", "scripts": {"test": "yarn jest"}, "devDependencies": {"jest": "1"}}
    (tmp_path / "package.json").write_text(json.dumps(manifest))
    (tmp_path / "yarn.lock").write_text("# yarn lockfile v1\n")
    data = _check(tmp_path, "--", "npm", "test", env={"PATH": "/usr/bin:/bin"})
    assert data["verdict"] == "env_failure"
    assert "Install `yarn` (`corepack enable`, or `npm install -g yarn`)" in data["digest"]
    assert "then run `yarn install` (this project's yarn.lock)" in data["digest"]


@pytest.mark.parametrize(
    ("lock", "advice"),
    [
        (None, "`pip install greenloop_missing_dep`"),
        ("uv.lock", "`uv sync`: uv.lock"),
        ("poetry.lock", "`poetry install`: poetry.lock"),
    ],
)
def test_env_hint_for_a_missing_python_module_is_the_projects_own_install_command(
    tmp_path: Path, lock: str | None, advice: str
) -> None:
    # a uv or Poetry project whose dependencies were never synced: not one pip install at a time
    test = "import greenloop_missing_dep\n\n\ndef test_a():\n    pass\n"
    (tmp_path / "test_app.py").write_text(test)
    if lock:
        (tmp_path / lock).write_text("")
    data = _check(tmp_path, "--", sys.executable, "-m", "pytest", "-q")
    assert data["verdict"] == "env_failure", data["digest"]
    assert advice in data["digest"], data["digest"]


@pytest.mark.parametrize(
    ("pyproject", "advice"),
    [
        (
            '[project]\nname = "app"\n[project.optional-dependencies]\n'
            'diagrams = ["greenloop-missing-dep-diagrams>=1", "jinja2"]\n',
            "`greenloop-missing-dep-diagrams` is in the project's `diagrams` extra: install it "
            "where the verifier runs (`pip install -e '.[diagrams]'`)",
        ),
        (
            '[project]\nname = "app"\n[dependency-groups]\n'
            'tests = ["pytest", "greenloop-missing-dep"]\n',
            "`greenloop-missing-dep` is in the project's `tests` dependency group: install it "
            "where the verifier runs (`pip install --group tests`",
        ),
        ('[project]\nname = "app"\n', "(`pip install greenloop_missing_dep`)"),
    ],
    ids=["extra", "dependency-group", "undeclared"],
)
def test_env_hint_for_a_missing_module_the_project_declares_names_its_extra_or_group(
    tmp_path: Path, pyproject: str, advice: str
) -> None:
    # pyparsing's tests import railroad, which its `diagrams` extra installs as railroad-diagrams:
    # the advice was `pip install railroad`, another distribution
    (tmp_path / "test_app.py").write_text(
        "import greenloop_missing_dep\n\n\ndef test_a():\n    pass\n"
    )
    (tmp_path / "pyproject.toml").write_text(pyproject)
    data = _check(tmp_path, "--", sys.executable, "-m", "pytest", "-q")
    assert data["verdict"] == "env_failure", data["digest"]
    assert advice in data["digest"], data["digest"]


def test_a_pytest_usage_error_beside_a_module_not_installed_names_the_module(
    tmp_path: Path,
) -> None:
    # structlog without its `tests` group: pytest exits 4 on "Unknown config option: asyncio_mode"
    # (pytest-asyncio's option, under --strict-config) after its collection failed on
    # time_machine: the digest said "pytest usage error" and "Fix the environment"
    (tmp_path / "test_app.py").write_text(
        "import greenloop_missing_dep\n\n\ndef test_a():\n    pass\n"
    )
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "app"\n[dependency-groups]\ntests = ["greenloop-missing-dep"]\n'
        '[tool.pytest.ini_options]\naddopts = ["--strict-config"]\nasyncio_mode = "auto"\n'
    )
    data = _check(tmp_path, "--", sys.executable, "-m", "pytest", "-q")
    assert data["verdict"] == "env_failure", data["digest"]
    assert data["stages"][0]["exit_code"] == 4, data["digest"]
    assert "module 'greenloop_missing_dep' is not installed" in data["digest"], data["digest"]
    assert "(`pip install --group tests`" in data["digest"], data["digest"]

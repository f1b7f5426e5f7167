"""Where the verifier comes from: command line > configuration > agent docs > detection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from greenloop.config import Config, StageSpec
from greenloop.detect.sources import detect_cascade
from greenloop.detect.stages import command_from_args, python_interpreter


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def stages(root: Path, config: Config | None = None) -> list[tuple[str, str]]:
    cascade = detect_cascade(root, config or Config())
    assert cascade is not None
    return [(s.name, s.display) for s in cascade.stages]


def test_several_words_run_as_argv_and_one_shell_string_through_sh() -> None:
    assert command_from_args(["pytest", "-x"]) == ("pytest", "-x")
    assert command_from_args(["ruff check . && pytest"]) == "ruff check . && pytest"


def test_command_line_wins_over_configuration(tmp_path: Path) -> None:
    config = Config(stages=(StageSpec(name="test", run="make check"),))
    cascade = detect_cascade(tmp_path, config, ["pytest", "-q"])
    assert cascade is not None
    assert cascade.source == "command line"
    assert [s.display for s in cascade.stages] == ["pytest -q"]


def test_agents_md_test_command_is_recognised(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "AGENTS.md": "# Notes\n\n- **Test command:** `make test-fast`\n",
            "Makefile": "test:\n\ttrue\n",
        },
    )
    assert stages(tmp_path) == [("test", "make test-fast")]


def test_npm_placeholder_test_script_is_not_a_verifier(tmp_path: Path) -> None:
    placeholder = {"scripts": {"test": 'echo "Error: no test specified" && exit 1'}}
    write(tmp_path, {"package.json": json.dumps(placeholder)})
    assert detect_cascade(tmp_path, Config()) is None
    write(tmp_path, {"package.json": json.dumps({"scripts": {"test": "jest"}})})
    assert stages(tmp_path) == [("test", "npm test")]


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"Cargo.toml": "[package]\nname = 'x'\n"}, "cargo test"),
        ({"Makefile": "build:\n\ttrue\ntest: build\n\ttrue\n"}, "make test"),
        ({"go.mod": "module x\n"}, "go test ./..."),
    ],
)
def test_project_files_pick_the_test_runner(
    tmp_path: Path, files: dict[str, str], expected: str
) -> None:
    write(tmp_path, files)
    assert stages(tmp_path) == [("test", expected)]


@pytest.mark.parametrize(
    ("files", "why"),
    [
        (
            {"requirements.txt": "requests\n", "tests/test_api.py": "def test_a(): pass\n"},
            "requirements.txt",
        ),
        ({"calc.py": "X = 1\n", "test_calc.py": "def test_x(): pass\n"}, "test_calc.py"),
        (
            {"src/calc.py": "X = 1\n", "tests/calc_test.py": "def test_x(): pass\n"},
            "tests/calc_test.py",
        ),
    ],
)
def test_detect_picks_pytest_for_python_tests_without_a_packaging_file(
    tmp_path: Path, files: dict[str, str], why: str
) -> None:
    write(tmp_path, files)
    cascade = detect_cascade(tmp_path, Config())
    assert cascade is not None
    [stage] = cascade.stages
    assert stage.argv[-2:] == ("-m", "pytest")
    assert stage.why == f"Python project ({why})"


def test_detect_finds_nothing_in_python_files_without_tests(tmp_path: Path) -> None:
    write(tmp_path, {"calc.py": "X = 1\n", "docs/test_notes.py": "x = 1\n"})
    assert detect_cascade(tmp_path, Config()) is None


def test_lint_and_type_stages_come_first_and_respect_mypy_files(tmp_path: Path) -> None:
    # the project's own virtualenv has the tools (detection prefers it over PATH)
    write(tmp_path, {".venv/bin/ruff": "", ".venv/bin/mypy": "", ".venv/bin/python": ""})
    write(tmp_path, {"pyproject.toml": "[tool.ruff]\n[tool.mypy]\nstrict = true\n"})
    names = stages(tmp_path)
    assert names == [
        ("lint", ".venv/bin/ruff check ."),
        ("type", ".venv/bin/mypy ."),
        ("test", ".venv/bin/python -m pytest"),
    ]
    write(tmp_path, {"pyproject.toml": '[tool.ruff]\n[tool.mypy]\nfiles = ["src"]\n'})
    assert stages(tmp_path)[1][1].endswith("mypy")


def test_detect_runs_pytest_through_the_interpreter_of_the_pytest_on_path_as_typed(
    tmp_path: Path,
) -> None:
    # `python -m pytest` puts the repo root on sys.path (a flat layout imports); shown as typed
    bin_dir = tmp_path / "bin"
    write(bin_dir, {"pytest": f"#!{bin_dir}/python3\nimport pytest\n", "python3": ""})
    found = {"pytest": str(bin_dir / "pytest"), "python3": str(bin_dir / "python3")}
    assert python_interpreter(tmp_path, found.get) == ("python3",)
    elsewhere = {"pytest": str(bin_dir / "pytest"), "python3": "/usr/bin/python3"}
    assert python_interpreter(tmp_path, elsewhere.get) == (f"{bin_dir}/python3",)
    write(bin_dir, {"pytest": "#!/usr/bin/env python3\n"})
    assert python_interpreter(tmp_path, found.get) == ("python3",)
    assert python_interpreter(tmp_path, {}.get) == ("python3",)


def test_detect_reads_mypy_files_only_from_mypys_own_section(tmp_path: Path) -> None:
    # more-itertools' setup.cfg: bumpversion's `files =` sits above `[mypy]`, which has none;
    # a bare `mypy` then stopped at "Missing target module, package, files, or command"
    write(tmp_path, {".venv/bin/mypy": "", ".venv/bin/python": ""})
    bumpversion = "[bumpversion]\nfiles = pkg/__init__.py\n\n"
    write(tmp_path, {"setup.cfg": f"{bumpversion}[mypy]\nstrict = true\n\n[mypy-tests.*]\n"})
    assert dict(stages(tmp_path))["type"] == ".venv/bin/mypy ."
    write(tmp_path, {"setup.cfg": f"{bumpversion}[mypy]  # typing\nfiles = pkg\n"})
    assert dict(stages(tmp_path))["type"] == ".venv/bin/mypy"
    # mypy reads the first config file that has its section: pyproject.toml before setup.cfg
    write(tmp_path, {"pyproject.toml": "[tool.mypy]\nstrict = true\n[tool.other]\nfiles = 1\n"})
    assert dict(stages(tmp_path))["type"] == ".venv/bin/mypy ."


@pytest.mark.parametrize(
    ("declarations", "extra"), [(True, " --emitDeclarationOnly false"), (False, "")]
)
def test_type_stage_turns_off_the_configs_emit_declaration_only_which_tsc_refuses_with_no_emit(
    tmp_path: Path, declarations: bool, extra: str
) -> None:
    # wooorm/longest-streak's tsconfig (checkJs, declaration, emitDeclarationOnly): `tsc --noEmit`
    # exits 2 with TS5053 "Option 'emitDeclarationOnly' cannot be specified with option 'noEmit'"
    options = {"checkJs": True, "declaration": True, "emitDeclarationOnly": declarations}
    tsconfig = {"include": ["**/**.js"], "compilerOptions": options}
    write(tmp_path, {"tsconfig.json": json.dumps(tsconfig, indent=2), "node_modules/.bin/tsc": ""})
    assert ("type", f"node_modules/.bin/tsc --noEmit{extra}") in stages(tmp_path)


MANAGE_PY = (
    "import os\nimport sys\n\n"
    'os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mysite.settings")\n'
    "from django.core.management import execute_from_command_line\n\n"
    "execute_from_command_line(sys.argv)\n"
)


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"manage.py": MANAGE_PY, "requirements.txt": "django\n"}, ("manage.py", "test")),
        (  # pytest-django configured: its pytest knows the settings
            {
                "manage.py": MANAGE_PY,
                "pytest.ini": "[pytest]\nDJANGO_SETTINGS_MODULE = mysite.settings\n",
            },
            ("-m", "pytest"),
        ),
        ({"manage.py": MANAGE_PY, "requirements.txt": "django\npytest-django\n"}, ("-m", "pytest")),
        ({"manage.py": "print('a django-like script')\n", "setup.py": ""}, ("-m", "pytest")),
    ],
    ids=["django", "pytest-django-settings", "pytest-django-required", "another-manage-py"],
)
def test_detect_runs_a_django_projects_tests_with_manage_py_unless_pytest_knows_django(
    tmp_path: Path, files: dict[str, str], expected: tuple[str, str]
) -> None:
    write(tmp_path, files)
    cascade = detect_cascade(tmp_path, Config())
    assert cascade is not None
    [stage] = cascade.stages
    assert stage.argv[-2:] == expected, stage


@pytest.mark.parametrize(
    ("lock", "tool"), [("poetry.lock", "poetry"), ("pdm.lock", "pdm"), ("Pipfile.lock", "pipenv")]
)
def test_detect_runs_pytest_in_the_venv_poetry_pdm_or_pipenv_keeps_outside_the_project(
    tmp_path: Path, lock: str, tool: str
) -> None:
    # Poetry keeps the venv in its cache: `python3 -m pytest` from PATH found no pytest there
    write(tmp_path, {lock: "", "pyproject.toml": "[project]\nname = 'x'\n"})
    on_path = {tool: f"/usr/local/bin/{tool}", "pytest": None}.get
    assert python_interpreter(tmp_path, on_path, environ={}) == (tool, "run", "python")
    # the user's activated venv, or no such tool installed: the interpreter on PATH, as before
    assert python_interpreter(tmp_path, on_path, environ={"VIRTUAL_ENV": "/v"}) == ("python3",)
    assert python_interpreter(tmp_path, {}.get, environ={}) == ("python3",)
    write(tmp_path, {".venv/bin/python": ""})  # an in-project venv wins
    assert python_interpreter(tmp_path, on_path, environ={}) == (".venv/bin/python",)


ESLINT_PROJECT = {"eslint.config.js": "export default [];\n", "node_modules/.bin/eslint": ""}


@pytest.mark.parametrize(
    "scripts",
    [
        {"lint": "eslint .", "test": "npm run lint && node --test"},
        {"lint": "eslint .", "pretest": "npm run lint", "test": "mocha"},
        {"lint": "eslint src test", "test": "run-s lint unit", "unit": "node --test"},
        {"check": "eslint .", "pretest": "pnpm check", "test": "vitest run"},
        {"test": "eslint . && tape test/*.js"},
    ],
)
def test_a_lint_stage_that_npm_test_already_runs_is_not_listed_again(
    tmp_path: Path, scripts: dict[str, str]
) -> None:
    write(tmp_path, {**ESLINT_PROJECT, "package.json": json.dumps({"scripts": scripts})})
    assert stages(tmp_path) == [("test", "npm test")]


def test_a_lint_stage_that_npm_test_does_not_run_stays_before_the_tests(tmp_path: Path) -> None:
    scripts = {"lint": "eslint .", "test": "node --test", "posttest": "npm run coverage"}
    write(tmp_path, {**ESLINT_PROJECT, "package.json": json.dumps({"scripts": scripts})})
    assert stages(tmp_path) == [("lint", "node_modules/.bin/eslint ."), ("test", "npm test")]


def test_detect_says_why_npm_tests_lint_is_no_stage_of_its_own(tmp_path: Path) -> None:
    scripts = {"lint": "eslint .", "pretest": "npm run lint", "test": "mocha"}
    write(tmp_path, {**ESLINT_PROJECT, "package.json": json.dumps({"scripts": scripts})})
    cascade = detect_cascade(tmp_path, Config())
    assert cascade is not None
    assert cascade.stages[0].why.endswith("; it runs eslint too, so no eslint stage")

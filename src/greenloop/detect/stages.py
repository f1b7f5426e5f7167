"""Repository -> Cascade of verifier stages, fastest first (format -> lint -> type -> test -> build)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from greenloop.detect.stage import Stage

TYPE_CHECKING = False  # not typing's: the Stop hook imports this on every agent turn
if TYPE_CHECKING:
    from greenloop.detect.ci import CiSkip
    from greenloop.detect.workspace import Workspace

__all__ = ["Cascade", "Stage"]  # Stage is defined in stage.py, imported from here too
ORDER = ("format", "lint", "type", "test", "build", "fresh")
# npm's placeholder for a project without tests.
NPM_NO_TEST = "no test specified"
_SHELL_CHARS = re.compile(r"[|&;<>()$`*?\[\]{}~'\"\s]")
# AGENTS.md / CLAUDE.md convention: a line "Test command: `CMD`" (also "Tests:", "Verify:").
_DOC_COMMAND = re.compile(
    r"^\s*(?:[-*]\s*)?\**(?:test(?:s|ing)?|verify|verifier)(?:\s+command)?\**\s*:\**\s*`([^`]+)`",
    re.IGNORECASE | re.MULTILINE,
)
_MYPY_FILES = re.compile(r"^\s*files\s*=", re.MULTILINE)
_SECTION = re.compile(r"^\s*\[")
# mypy's own search order: the first file with its section is the one it reads
MYPY_CONFIGS = (
    ("mypy.ini", "[mypy]"),
    (".mypy.ini", "[mypy]"),
    ("pyproject.toml", "[tool.mypy]"),
    ("setup.cfg", "[mypy]"),
)
_DOC_COMMENT = re.compile(r"<!--\s*greenloop:\s*(.+?)\s*-->")


@dataclass(frozen=True, slots=True, kw_only=True)
class Cascade:
    """The verifier stages to run, fastest first, and where they came from."""

    stages: tuple[Stage, ...]
    source: str
    """Where the stages came from: command line, config file, AGENTS.md, detected."""
    workspace: Workspace | None = None
    """The monorepo the stages verify, package by package (issue 29); None: one project."""
    skipped: tuple[CiSkip, ...] = ()
    """The CI steps not taken as stages, each with why (issue 38): only with ``stages_from``."""

    @property
    def display(self) -> str:
        """The whole cascade as one shell line an agent can run from the root: a package's
        ``cd`` stays in its own subshell, so the next package's folder is found from the root."""
        several = len(self.stages) > 1
        return " && ".join(
            f"({s.display})" if s.cwd and several else s.display for s in self.stages
        )


def command_from_args(args: Sequence[str]) -> tuple[str, ...] | str:
    """``-- pytest -x`` runs as argv; one argument with shell syntax runs through ``sh -c``."""
    if len(args) == 1 and _SHELL_CHARS.search(args[0]):
        return args[0]
    return tuple(args)


def command_from_docs(root: Path) -> Stage | None:
    for name in ("AGENTS.md", "CLAUDE.md"):
        path = root / name
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        m = _DOC_COMMENT.search(text) or _DOC_COMMAND.search(text)
        if m:
            return Stage(name="test", command=m.group(1).strip(), why=f"test command in {name}")
    return None


def detect_stages(root: Path) -> tuple[Stage, ...]:
    found = [*_lint_and_type_stages(root)]
    test = _test_stage(root)
    if test:
        kept = _not_run_twice(root, found, test)
        dropped = [s.command[0] for s in found if s not in kept]
        if dropped:
            also = ", ".join(Path(str(c)).name for c in dropped)
            test = replace(test, why=f"{test.why}; it runs {also} too, so no {also} stage")
        found = [*kept, test]
    return tuple(sorted(found, key=lambda s: ORDER.index(s.name)))


# `npm run lint`, `pnpm lint`, `yarn run lint`, `run-s lint build` / `npm-run-all -s lint test`:
# a string, compiled where a package.json is read (re caches it), not on every import of this module
_NPM_SCRIPT_REF = (
    r"\b(?:npm\s+run(?:-script)?|pnpm(?:\s+run)?|yarn(?:\s+run)?|bun\s+run)\s+([\w:.-]+)"
    r"|\b(?:run-s|run-p|npm-run-all)((?:\s+[\w:.*-]+)+)"
)


def _not_run_twice(root: Path, found: list[Stage], test: Stage) -> list[Stage]:
    """The lint and type stages that ``npm test`` does not already run (its ``pretest``, the
    scripts it calls): else every verify runs eslint twice (issue 37)."""
    if test.command != ("npm", "test"):
        return found
    ran = set(_npm_test_words(root))
    kept = []
    for stage in found:
        tool = Path(stage.command[0]).name if isinstance(stage.command, tuple) else ""
        if tool in ("eslint", "tsc") and tool in ran:
            continue
        kept.append(stage)
    return kept


def _npm_test_words(root: Path) -> list[str]:
    """The words of every script ``npm test`` runs: pretest, test, posttest and the scripts they
    call by name (``npm run lint``, ``run-s lint``), each once."""
    scripts = package_json(root).get("scripts", {})
    if not isinstance(scripts, dict):
        return []
    queue = ["pretest", "test", "posttest"]
    seen: set[str] = set()
    words: list[str] = []
    while queue and len(seen) < 50:
        name = queue.pop(0)
        text = scripts.get(name)
        if name in seen or not isinstance(text, str):
            continue
        seen.add(name)
        words += [Path(w).name for w in re.split(r"[\s;&|()]+", text) if w]
        for one, several in re.findall(_NPM_SCRIPT_REF, text):
            called = [one] if one else several.split()
            queue += [c for c in called if not c.startswith("-")]
            queue += [f"{p}{c}" for c in called for p in ("pre", "post") if one]
    return words


def _test_stage(root: Path) -> Stage | None:
    probes = (_npm_test, _cargo_test, _make_test, _just_test, _ruby_test, _django_test, _pytest)
    for probe in (*probes, _go_test):
        stage = probe(root)
        if stage:
            return stage
    return None


def _npm_test(root: Path) -> Stage | None:
    scripts = package_json(root).get("scripts", {})
    test = scripts.get("test") if isinstance(scripts, dict) else None
    if not isinstance(test, str) or NPM_NO_TEST in test:
        return None
    return Stage(name="test", command=("npm", "test"), why=f"package.json scripts.test: {test}")


def _cargo_test(root: Path) -> Stage | None:
    if (root / "Cargo.toml").is_file():
        return Stage(name="test", command=("cargo", "test"), why="Cargo.toml")
    return None


def _make_test(root: Path) -> Stage | None:
    for name in ("GNUmakefile", "makefile", "Makefile"):
        path = root / name
        if path.is_file() and re.search(r"^test\s*:", _read(path), re.MULTILINE):
            return Stage(name="test", command=("make", "test"), why=f"{name} has a test target")
    return None


def _just_test(root: Path) -> Stage | None:
    for name in ("justfile", "Justfile", ".justfile"):
        path = root / name
        if path.is_file() and re.search(r"^@?test\b[^:=]*:", _read(path), re.MULTILINE):
            return Stage(name="test", command=("just", "test"), why=f"{name} has a test recipe")
    return None


def _ruby_test(root: Path) -> Stage | None:
    if (root / "Gemfile").is_file() and (root / "spec").is_dir():
        return Stage(name="test", command=("bundle", "exec", "rspec"), why="Gemfile and spec/")
    if (root / "Rakefile").is_file():
        return Stage(name="test", command=("bundle", "exec", "rake", "test"), why="Rakefile")
    return None


PY_MARKERS = (
    "pytest.ini",
    "pyproject.toml",
    "setup.cfg",
    "tox.ini",
    "setup.py",
    "conftest.py",
    "requirements.txt",
    "Pipfile",
)
# pytest's default discovery, at the root or in the usual test folders: a project of scripts and
# tests with no packaging file at all is still a pytest project
PY_TEST_FILES = ("test_*.py", "*_test.py", "tests/test_*.py", "tests/*_test.py", "test/test_*.py")


# where a project configures pytest-django (its settings module, or the plugin itself)
PYTEST_DJANGO_PLACES = (
    "pytest.ini",
    "pyproject.toml",
    "setup.cfg",
    "tox.ini",
    "conftest.py",
    "requirements.txt",
    "requirements-dev.txt",
)


def _django_test(root: Path) -> Stage | None:
    """A Django project (``manage.py``) whose pytest does not know Django (no pytest-django):
    its tests run as ``manage.py test``; pytest would fail every one on unconfigured settings."""
    manage = _read(root / "manage.py")
    if "django.core.management" not in manage and "DJANGO_SETTINGS_MODULE" not in manage:
        return None
    for name in PYTEST_DJANGO_PLACES:
        text = _read(root / name)
        if "DJANGO_SETTINGS_MODULE" in text or "pytest-django" in text or "pytest_django" in text:
            return None
    return Stage(
        name="test",
        command=(*python_interpreter(root, tool="django-admin"), "manage.py", "test"),
        why="Django project (manage.py)",
    )


def _pytest(root: Path) -> Stage | None:
    marker = next((m for m in PY_MARKERS if (root / m).is_file()), None)
    if marker is None:
        marker = next(
            (f.relative_to(root).as_posix() for p in PY_TEST_FILES for f in root.glob(p)), None
        )
    if marker is None:
        return None
    # `python -m pytest` puts the repo root on sys.path: a flat-layout package that is not installed
    # imports there, while bare `pytest` fails with ModuleNotFoundError (issue 11)
    return Stage(
        name="test",
        command=(*python_interpreter(root), "-m", "pytest"),
        why=f"Python project ({marker})",
    )


def _go_test(root: Path) -> Stage | None:
    if (root / "go.mod").is_file():
        return Stage(name="test", command=("go", "test", "./..."), why="go.mod")
    return None


def _which(tool: str) -> str | None:
    import shutil  # only when a stage is detected, not configured (its import costs ~2 ms)

    return shutil.which(tool)


def python_tool(root: Path, tool: str) -> tuple[str, ...]:
    """Prefer the project's own virtualenv, then PATH, then ``python3 -m``."""
    for venv in (".venv", "venv"):
        exe = root / venv / "bin" / tool
        if exe.is_file():
            return (str(exe.relative_to(root)),)
    if _which(tool):
        return (tool,)
    return ("python3", "-m", tool)


def python_interpreter(
    root: Path,
    which: Callable[[str], str | None] = _which,
    *,
    tool: str = "pytest",
    environ: Mapping[str, str] = os.environ,
) -> tuple[str, ...]:
    """The project's interpreter: its virtualenv's; else, outside an activated venv, the one its
    Poetry, PDM or Pipenv keeps elsewhere (``poetry run python``); else the one running ``tool`` on PATH."""
    for venv in (".venv", "venv"):
        exe = root / venv / "bin" / "python"
        if exe.is_file():
            return (str(exe.relative_to(root)),)
    runner = () if environ.get("VIRTUAL_ENV") else _project_runner(root, which)
    if runner:
        return (*runner, "python")
    script = which(tool)
    interpreter = _shebang(Path(script)) if script else ""
    if not interpreter:
        return ("python3",)
    name = Path(interpreter).name
    # shown as the user types it when PATH finds the same interpreter by its short name
    return (name,) if which(name) == interpreter else (interpreter,)


# lock file -> the tool that keeps the project's venv outside it (Poetry's cache, PDM's, Pipenv's)
PROJECT_RUNNERS = (("poetry.lock", "poetry"), ("pdm.lock", "pdm"), ("Pipfile.lock", "pipenv"))


def _project_runner(root: Path, which: Callable[[str], str | None]) -> tuple[str, ...]:
    for lock, tool in PROJECT_RUNNERS:
        if (root / lock).is_file() and which(tool):
            return (tool, "run")
    return ()


def _shebang(script: Path) -> str:
    try:
        with script.open("rb") as f:
            first = f.readline(512).decode(errors="replace").strip()
    except OSError:
        return ""
    words = first.removeprefix("#!").split()
    if not first.startswith("#!") or not words or "python" not in Path(words[-1]).name:
        return ""
    return words[-1] if len(words) == 1 or Path(words[0]).name == "env" else words[0]


def _lint_and_type_stages(root: Path) -> list[Stage]:
    stages: list[Stage] = []
    pyproject = _read(root / "pyproject.toml")
    ruff_cfg = "[tool.ruff" in pyproject or any(
        (root / n).is_file() for n in ("ruff.toml", ".ruff.toml")
    )
    if ruff_cfg and _installed(root, "ruff"):
        stages.append(
            Stage(
                name="lint",
                command=(*python_tool(root, "ruff"), "check", "."),
                why="ruff configured",
            )
        )
    mypy_section = _mypy_section(root)
    if mypy_section is not None and _installed(root, "mypy"):
        # the project's own `files =` decides what mypy checks; only without it, the whole tree
        targets = () if _MYPY_FILES.search(mypy_section) else (".",)
        stages.append(
            Stage(
                name="type", command=(*python_tool(root, "mypy"), *targets), why="mypy configured"
            )
        )
    if _eslint_configured(root) and (root / "node_modules/.bin/eslint").exists():
        stages.append(
            Stage(name="lint", command=("node_modules/.bin/eslint", "."), why="eslint configured")
        )
    if (root / "tsconfig.json").is_file() and (root / "node_modules/.bin/tsc").exists():
        stages.append(
            Stage(name="type", command=_tsc_no_emit(root / "tsconfig.json"), why="tsconfig.json")
        )
    return stages


def _tsc_no_emit(tsconfig: Path) -> tuple[str, ...]:
    """``tsc --noEmit``; with the config's ``emitDeclarationOnly`` turned off (wooorm's packages set
    it: tsc refuses the pair, TS5053, an error of greenloop's command, not of the code)."""
    declarations = _EMIT_DECLARATIONS_ONLY.search(_read(tsconfig))
    return (
        "node_modules/.bin/tsc",
        "--noEmit",
        *(("--emitDeclarationOnly", "false") if declarations else ()),
    )


_EMIT_DECLARATIONS_ONLY = re.compile(r'"emitDeclarationOnly"\s*:\s*true')


def _eslint_configured(root: Path) -> bool:
    names = ("eslint.config.js", "eslint.config.mjs", "eslint.config.cjs", "eslint.config.ts")
    legacy = (".eslintrc", ".eslintrc.js", ".eslintrc.cjs", ".eslintrc.json", ".eslintrc.yml")
    return any((root / n).is_file() for n in (*names, *legacy)) or "eslintConfig" in package_json(
        root
    )


def _installed(root: Path, tool: str) -> bool:
    return any((root / v / "bin" / tool).is_file() for v in (".venv", "venv")) or bool(_which(tool))


def package_json(root: Path) -> dict[str, object]:
    try:
        data = json.loads((root / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _mypy_section(root: Path) -> str | None:
    """The body of the mypy section mypy itself will read: the first of its config files that
    has one (``[mypy]``; ``[tool.mypy]`` in pyproject.toml). Another section's ``files =``
    (bumpversion's, in setup.cfg) is not mypy's."""
    for name, header in MYPY_CONFIGS:
        lines = _read(root / name).splitlines()
        starts = [i for i, line in enumerate(lines) if line.split("#")[0].strip() == header]
        if starts:
            body = lines[starts[0] + 1 :]
            end = next((i for i, line in enumerate(body) if _SECTION.match(line)), len(body))
            return "\n".join(body[:end])
        if name.endswith("mypy.ini") and (root / name).is_file():
            return ""  # mypy reads it even without its section
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""

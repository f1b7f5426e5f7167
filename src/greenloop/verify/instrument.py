"""Ask tools for structured results, only where asking cannot change the result (issue 3).

``prepare`` decides the extra environment for one command and makes a private artifact directory;
the command runs with it (process.py); ``collect`` reads what was written; ``cleanup`` removes it.

Rules:
- pytest plugin (PYTHONPATH + PYTEST_PLUGINS, both prepended to existing values): when the command
  names pytest anywhere (``pytest``, ``python -m pytest``, ``uv run pytest``, a shell string), or when
  it is a task runner (make, tox, nox, uv, hatch, ...) in a Python project — env is inherited, so the
  plugin reaches a pytest started by ``make test``. It is inert when no pytest runs: the directory put
  on PYTHONPATH holds only ``greenloop_pytest_plugin.py`` (never the package dir, whose ``pytest.py``
  parser module would shadow the real pytest). A command that sets PYTHONPATH itself
  (``PYTHONPATH=src pytest``, ``env PYTHONPATH=. pytest``, ``export PYTHONPATH=src; pytest``) gets the
  directory inside its own assignment (``command``), or its value would drop the plugin and every run
  would be spoiled and run twice.
- ``RUFF_OUTPUT_FORMAT=json`` only when argv[0] is ruff itself, not ``ruff format`` and no shell.
- ``MYPY_FORCE_TERMINAL_WIDTH=2000`` when the command names mypy (a project testing its mypy
  plugin through pytest keeps the width its expected outputs were written at).
- ``GOFLAGS=-v`` only when argv is exactly ``go test ...`` (every test's result, so the counts):
  not ``-json``, whose events are ~7x the bytes of the same text, so on a suite of ~1 000 tests
  the capture cap dropped the middle of the run and its failures with it (BurntSushi/toml).
- node:test junit through NODE_OPTIONS only for ``node --test`` without reporter flags of its own
  (Node >= 20 honours ``--test-reporter`` there; spec stays on stdout).
- JUnit XML that tools always write (Surefire, Gradle, nextest): files newer than the run's start.
"""

from __future__ import annotations

import os
import re
import shlex
import time
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from greenloop import __version__
from greenloop.cachedir import user_cache

PLUGIN_MODULE = "greenloop_pytest_plugin"
PLUGIN_ENV_DIR = "GREENLOOP_PYTEST_REPORT_DIR"
PLUGIN_PREFIX = "pytest-plugin/"
JUNIT_PREFIX = "junit/"
JUNIT_DIRS = ("target/surefire-reports", "build/test-results", "target/nextest")
MAX_ARTIFACT_BYTES = 8 * 1024 * 1024
RUNNERS = frozenset({"make", "tox", "nox", "uv", "hatch", "poetry", "pdm", "rye", "just", "task"})
PY_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "pytest.ini", "tox.ini", "conftest.py")
# A shell assignment to PYTHONPATH at the start of a word (not ``${PYTHONPATH}``, not ``X_PYTHONPATH=``)
_SETS_PYTHONPATH = r"(?:^|(?<=[\s;&|(`]))PYTHONPATH="
_VALUE_ENDS = " \t\n;&|)`"
# A CSI sequence (colour, cursor) whose ESC is raw, JSON-escaped or an XML character reference
_COLOUR = r"(?:\x1b|\\u001[bB]|&#27;|&#x1[bB];)\[[0-?]*[ -/]*[@-~]"
# pytest's message when PYTEST_PLUGINS arrives but our PYTHONPATH did not (e.g. a filtered env).
PLUGIN_LOAD_ERROR = f'Error importing plugin "{PLUGIN_MODULE}"'
# Variables by which a test runner learns an AI agent runs it, and then prints less (issue 25):
# std-env 4.3's agent detection (Vitest 4: the `agent` reporter, which leaves out passing tests, no
# colours, no watch), bun test's quieter output, testthat's LLM reporter. A verdict must not depend
# on who started the verifier, so they are removed from its environment (never the agent's).
AGENT_MARKERS = frozenset(
    {
        "AI_AGENT",
        "AGENT",
        "CLAUDECODE",
        "CLAUDE_CODE",
        "GEMINI_CLI",
        "CODEX_SANDBOX",
        "CODEX_THREAD_ID",
        "OPENCODE",
        "AUGMENT_AGENT",
        "GOOSE_PROVIDER",
        "JUNIE_DATA",
        "JUNIE_SHIM_PATH",
        "COPILOT_AGENT",
        "COPILOT_CLI",
        "CURSOR_AGENT",
        "REPL_ID",
    }
)
# ... and variables with another use, removed only when their value names an agent (std-env)
AGENT_VALUES = {"EDITOR": "devin", "TERM_PROGRAM": "kiro"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Instrumentation:
    """The side channels a command runs with (pytest plugin, junit files), to collect after."""

    env: tuple[tuple[str, str], ...] = ()
    """Variables to add to the command's environment."""
    artifact_dir: Path | None = None
    """Private directory for side files; removed by ``cleanup``."""
    pytest_plugin: bool = False
    plugin_dir: Path | None = None
    """The directory holding only the pytest plugin, put on PYTHONPATH."""
    node_junit: Path | None = None
    junit_dirs: tuple[Path, ...] = ()
    started_at: float = 0.0
    """Wall-clock start: JUnit files older than this belong to an earlier run."""


def prepare(
    argv: tuple[str, ...],
    workdir: Path,
    environ: Mapping[str, str] = os.environ,
    *,
    now: float | None = None,
) -> Instrumentation:
    started = time.time() if now is None else now
    junit_dirs = tuple(workdir / d for d in JUNIT_DIRS)
    env: dict[str, str] = {}
    artifact_dir: Path | None = None
    pytest_plugin = _wants_pytest(argv, workdir)
    node_junit: Path | None = None
    if pytest_plugin or _is_node_test(argv):
        artifact_dir = private_dir(environ)
    plugin_dir: Path | None = None
    if pytest_plugin and artifact_dir is not None:
        plugin_dir = _plugin_dir(artifact_dir, environ)
        env |= _pytest_env(artifact_dir, plugin_dir, environ)
    if _is_node_test(argv) and artifact_dir is not None:
        node_junit = artifact_dir / "node-junit.xml"
        env["NODE_OPTIONS"] = _prepend(environ.get("NODE_OPTIONS"), _node_flags(node_junit), " ")
    if _is_ruff_check(argv):
        env["RUFF_OUTPUT_FORMAT"] = "json"
    if {"mypy", "dmypy"} & set(_words(argv)):
        env["MYPY_FORCE_TERMINAL_WIDTH"] = "2000"  # --pretty output unwrapped, one line a note
    if argv[:2] == ("go", "test"):
        env["GOFLAGS"] = _prepend(environ.get("GOFLAGS"), "-v", " ")
    return Instrumentation(
        env=tuple(sorted(env.items())),
        artifact_dir=artifact_dir,
        pytest_plugin=pytest_plugin,
        plugin_dir=plugin_dir,
        node_junit=node_junit,
        junit_dirs=junit_dirs,
        started_at=started,
    )


def without_agent_markers(env: Mapping[str, str]) -> tuple[dict[str, str], tuple[str, ...]]:
    """The verifier's environment without what tells a runner an agent runs it; and the names
    removed, to record. ``PATH`` is never touched (std-env also reads ``.pi/agent`` in it)."""
    removed = sorted(
        name
        for name, value in env.items()
        if name in AGENT_MARKERS or (name in AGENT_VALUES and AGENT_VALUES[name] in value.lower())
    )
    return {k: v for k, v in env.items() if k not in removed}, tuple(removed)


def _words(argv: tuple[str, ...]) -> list[str]:
    return [os.path.basename(w) for arg in argv for w in arg.split()]


def _wants_pytest(argv: tuple[str, ...], workdir: Path) -> bool:
    words = _words(argv)
    if any(w in ("pytest", "py.test") for w in words):
        return True
    runner = bool(words) and words[0] in RUNNERS
    return runner and any((workdir / m).exists() for m in PY_MARKERS)


def _pytest_env(artifact_dir: Path, plugin_dir: Path, environ: Mapping[str, str]) -> dict[str, str]:
    reports = artifact_dir / "pytest"
    reports.mkdir()
    return {
        "PYTHONPATH": _prepend(environ.get("PYTHONPATH"), str(plugin_dir), os.pathsep),
        "PYTEST_PLUGINS": _prepend(environ.get("PYTEST_PLUGINS"), PLUGIN_MODULE, ","),
        PLUGIN_ENV_DIR: str(reports),
    }


def command(stage_command: tuple[str, ...] | str, inst: Instrumentation) -> tuple[str, ...] | str:
    """The command to run: the plugin's directory put first in PYTHONPATH assignments of its own."""
    if inst.plugin_dir is None:
        return stage_command
    ours = str(inst.plugin_dir)
    if isinstance(stage_command, str):
        return _in_script(stage_command, ours)
    if len(stage_command) >= 3 and _is_shell(stage_command):  # a batch task's `verifier` string
        return (*stage_command[:2], _in_script(stage_command[2], ours), *stage_command[3:])
    if stage_command and os.path.basename(stage_command[0]) == "env":
        return tuple(_env_word(word, ours) for word in stage_command)
    return stage_command


def _in_script(script: str, ours: str) -> str:
    return re.sub(
        _SETS_PYTHONPATH,
        lambda m: _assignment(shlex.quote(ours), script[m.end() : m.end() + 1]),
        script,
    )


def _is_shell(argv: tuple[str, ...]) -> bool:
    """``sh -c SCRIPT`` (bash, dash, zsh too)."""
    return os.path.basename(argv[0]) in ("sh", "bash", "dash", "zsh") and argv[1] == "-c"


def _env_word(word: str, ours: str) -> str:
    """One word of ``env NAME=VALUE ... cmd``."""
    if not word.startswith("PYTHONPATH="):
        return word
    value = word.removeprefix("PYTHONPATH=")
    return _assignment(ours, value[:1]) + value


def _assignment(ours: str, first: str) -> str:
    """``PYTHONPATH=<ours>:`` before a value, ``PYTHONPATH=<ours>`` for an empty one (an empty
    entry would put the working directory on sys.path)."""
    return f"PYTHONPATH={ours}" + ("" if first == "" or first in _VALUE_ENDS else ":")


def _plugin_dir(artifact_dir: Path, environ: Mapping[str, str]) -> Path:
    """A directory holding only the plugin: one per plugin version in the user's cache dir, so
    Python and pytest's assertion rewriter keep its compiled form between runs (issue 16: ~5 ms
    of every run); a copy in the run's own directory when there is no writable cache dir."""
    path = Path(__file__).parent.parent / "parsers" / f"{PLUGIN_MODULE}.py"
    source = path.read_bytes()
    cache = user_cache(environ)
    if cache is not None:
        info = path.stat()  # an edited or reinstalled plugin gets a directory of its own
        version = f"{__version__}-{info.st_size}-{info.st_mtime_ns}"
        with suppress(OSError):
            return _holding_only(cache / f"pytest-{version}" / "plugin", source)
    return _holding_only(artifact_dir / "plugin", source)


def _holding_only(folder: Path, source: bytes) -> Path:
    target = folder / f"{PLUGIN_MODULE}.py"
    if not target.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f".{PLUGIN_MODULE}.{os.getpid()}"  # not importable: no .py suffix
        partial.write_bytes(source)
        os.replace(partial, target)
    return folder


def _prepend(existing: str | None, value: str, sep: str) -> str:
    return f"{value}{sep}{existing}" if existing else value


def _is_node_test(argv: tuple[str, ...]) -> bool:
    if len(argv) < 2 or os.path.basename(argv[0]) != "node" or "--test" not in argv:
        return False
    return not any(a.startswith("--test-reporter") for a in argv)


def _node_flags(junit: Path) -> str:
    return (
        "--test-reporter=spec --test-reporter-destination=stdout "
        f"--test-reporter=junit --test-reporter-destination={junit}"
    )


def _is_ruff_check(argv: tuple[str, ...]) -> bool:
    if not argv or os.path.basename(argv[0]) != "ruff":
        return False
    return "format" not in argv[1:2] and not any(a.startswith("--output-format") for a in argv)


def collect(inst: Instrumentation) -> tuple[tuple[str, str], ...]:
    """(name, text) of every side file the run wrote: plugin JSON lines, fresh JUnit XML."""
    found: list[tuple[str, str]] = []
    if inst.artifact_dir is not None:
        for path in sorted((inst.artifact_dir / "pytest").glob("*.jsonl")):
            found.append((PLUGIN_PREFIX + path.name, _read(path)))
    if inst.node_junit is not None and inst.node_junit.is_file():
        found.append((JUNIT_PREFIX + "node-test.xml", _read(inst.node_junit)))
    for base in inst.junit_dirs:
        for path in sorted(base.rglob("*.xml")) if base.is_dir() else ():
            if _fresh(path, inst.started_at):
                found.append(
                    (JUNIT_PREFIX + str(path.relative_to(base.parent.parent)), _read(path))
                )
    return tuple(found)


def _fresh(path: Path, started_at: float) -> bool:
    try:
        return path.stat().st_mtime >= started_at - 1.0  # coarse filesystem timestamps
    except OSError:
        return False


def _read(path: Path) -> str:
    """A side file's text without colour: a tool whose colour is forced (FORCE_COLOR=1 in CI,
    ``--color=yes``) writes it into its reports too, raw, JSON-escaped or as an XML reference."""
    try:
        with path.open("rb") as handle:
            text = handle.read(MAX_ARTIFACT_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return ""
    return re.sub(_COLOUR, "", text) if "[" in text else text


def spoiled(inst: Instrumentation, output: str) -> bool:
    """The plugin itself broke the run (PYTHONPATH filtered out): run again without it."""
    return inst.pytest_plugin and PLUGIN_LOAD_ERROR in output


def cleanup(inst: Instrumentation) -> None:
    if inst.artifact_dir is not None:
        remove_tree(inst.artifact_dir)


# tempfile and shutil are not imported: together they cost ~5 ms on every Stop hook (issue 16).
def private_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """A new directory only this user can enter, under $TMPDIR or /tmp (as ``tempfile.mkdtemp``)."""
    base = Path(environ.get("TMPDIR") or "/tmp")
    for _ in range(100):
        path = base / f"greenloop-artifacts-{os.urandom(6).hex()}"
        try:
            path.mkdir(mode=0o700)
            return path
        except FileExistsError:
            continue
        except OSError:
            break  # no usable $TMPDIR: let tempfile search its other places
    import tempfile

    return Path(tempfile.mkdtemp(prefix="greenloop-artifacts-"))


def remove_tree(top: Path) -> None:
    """``shutil.rmtree(top, ignore_errors=True)``: symlinks are removed, never followed."""
    for folder, dirs, files in os.walk(top, topdown=False):
        for name in files:
            with suppress(OSError):
                os.unlink(os.path.join(folder, name))
        for name in dirs:
            path = os.path.join(folder, name)
            with suppress(OSError):
                if os.path.islink(path):
                    os.unlink(path)
                else:
                    os.rmdir(path)
    with suppress(OSError):
        os.rmdir(top)

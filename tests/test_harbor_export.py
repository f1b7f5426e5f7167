"""Bench tasks out (issue 28): ``greenloop bench --export harbor DIR`` on a real public project
(more-itertools at a real commit, from the shallow mirror tests/resources/swebench/ holds) writes
Harbor tasks that Harbor's own loader and linter (PyPI ``harbor`` 0.25.0) accept; each task's
tests/test.sh, run in a clone of its environment's repository, fails on the mutant and passes
after its solution/solve.sh. The Dockerfiles are written, not built: there is no Docker here."""

from __future__ import annotations

import fcntl
import glob
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import pytest

from greenloop.loop.loop import DEFAULT_TASK
from limits import hang

PACK = Path(__file__).parent / "resources" / "swebench" / "more-itertools.git.tar.gz"
BASE = "aa8c480086052d4c2a64490d3214e67b7c6e674b"  # the base of instance ...-cf186b5
VERIFIER = ["python", "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "tests/test_more.py"]
HARBOR = "harbor==0.25.0"
HARBOR_HOME = Path(os.environ.get("GREENLOOP_HARBOR_HOME", "/tmp/greenloop-harbor-0.25.0"))
TIMEOUT_S = hang(1800)  # a hang guard (a pip install the first time, then 2 mutants)


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # this venv's plugins are not the project's
    return env | extra


def _run(
    args: list[str], cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, env=env or _env(), check=False, capture_output=True, text=True,
        timeout=TIMEOUT_S, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _python312() -> str | None:
    """An interpreter harbor installs on (it needs Python 3.12 or newer), None when there is none."""
    for name in ("python3.13", "python3.12"):
        found = shutil.which(name)
        if found and _run([found, "--version"], Path.cwd()).returncode == 0:
            return found
    pyenv = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[2-9]*/bin/python3")))
    if pyenv:
        return pyenv[-1]
    return None


@pytest.fixture(scope="session")
def harbor() -> Path | None:
    """Harbor's venv (installed once from PyPI, then reused: offline after the first time); None
    on a machine with no Python >= 3.12, which Harbor's own code needs (PEP 695 syntax)."""
    python = _python312()
    if python is None:
        return None
    venv = HARBOR_HOME / "venv"
    HARBOR_HOME.mkdir(parents=True, exist_ok=True)
    with (HARBOR_HOME / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (HARBOR_HOME / "installed").exists():
            shutil.rmtree(venv, ignore_errors=True)
            for args in (
                [python, "-m", "venv", str(venv)],
                [str(venv / "bin" / "pip"), "install", "-q", HARBOR],
            ):
                done = _run(args, HARBOR_HOME, env=dict(os.environ))
                assert done.returncode == 0, done.stdout + done.stderr
            (HARBOR_HOME / "installed").write_text(HARBOR + "\n")
    return venv / "bin"


def _export(root: Path) -> tuple[list[Path], str]:
    """``bench --export harbor`` of 2 mutants of more-itertools at BASE: the task dirs, stdout."""
    with tarfile.open(PACK) as tar:
        tar.extractall(root, filter="data")
    project = root / "more-itertools"
    clone = ["git", "clone", "-q", str(root / "more-itertools__more-itertools.git"), str(project)]
    assert _run(clone, root).returncode == 0
    assert _run(["git", "checkout", "-q", "-B", "main", BASE], project).returncode == 0
    dest = root / "tasks"

    done = _run(
        [sys.executable, "-m", "greenloop", "-C", str(project), "bench", "--export", "harbor",
         str(dest), "--mutants", "2", "--", *VERIFIER],
        root,
    )  # fmt: skip

    assert done.returncode == 0, done.stdout + done.stderr
    tasks = sorted(p for p in dest.iterdir() if p.is_dir())
    assert len(tasks) == 2, done.stdout + done.stderr
    assert "2 Harbor task(s)" in done.stderr
    return tasks, done.stdout


def test_exported_mutants_are_harbor_tasks_that_fail_on_the_bug_and_pass_after_the_solution(
    tmp_path: Path, harbor: Path | None
) -> None:
    """One test, one export (the slow part: a module fixture would run once per xdist worker)."""
    tasks, listing = _export(tmp_path)

    _layout_is_harbors(tasks, listing)
    _test_script_fails_on_the_mutant_and_passes_after_the_solution(tasks, tmp_path / "ws")
    _an_agent_that_guts_the_tests_earns_no_reward(tasks[0], tmp_path / "gutted")
    if harbor is None:  # the checks above have run and held; only Harbor's own reader is missing
        pytest.skip("layout and rewards checked; Harbor's loader needs Python >= 3.12, none here")
    _harbor_reads(tasks, harbor)


def _harbor_reads(tasks: list[Path], harbor: Path) -> None:
    for task in tasks:
        lint = _run([str(harbor / "harbor"), "lint", str(task)], task.parent)
        assert lint.returncode == 0, lint.stdout + lint.stderr

        loaded = _run(
            [str(harbor / "python"), "-c",
             "import json, sys\n"
             "from harbor.models.task.task import Task\n"
             "t = Task(sys.argv[1])\n"
             "print(json.dumps({'name': t.name, 'instruction': t.instruction,\n"
             "  'test': str(t.paths.discovered_test_path), 'solve': str(t.paths.discovered_solve_path),\n"
             "  'verifier_s': t.config.verifier.timeout_sec,\n"
             "  'mode': t.config.verifier.environment_mode.value,\n"
             "  'metadata': t.config.metadata}))",
             str(task)],
            task.parent,
        )  # fmt: skip
        assert loaded.returncode == 0, loaded.stderr
        seen = json.loads(loaded.stdout)
        assert seen["name"] == f"greenloop-bench/more-itertools-{task.name}"
        assert seen["test"] == str(task / "tests" / "test.sh")
        assert seen["solve"] == str(task / "solution" / "solve.sh")
        assert seen["mode"] == "separate"
        assert seen["verifier_s"] == 600.0
        assert seen["metadata"]["mutant_id"] == task.name
        assert seen["metadata"]["project_commit"] == BASE
        assert DEFAULT_TASK in seen["instruction"]
        assert "FIRST FAILING TEST: tests/test_more.py::" in seen["instruction"]


def _layout_is_harbors(tasks: list[Path], listing: str) -> None:
    for task in tasks:
        files = sorted(str(p.relative_to(task)) for p in task.rglob("*") if p.is_file())
        assert files == [
            "environment/Dockerfile",
            "environment/repo.bundle",
            "instruction.md",
            "solution/solve.sh",
            "task.toml",
            "tests/test.sh",
        ]
        config = tomllib.loads((task / "task.toml").read_text())
        meta = config["metadata"]
        assert f"{task}  {meta['path']}:{meta['line']} {meta['kind']}" in listing
        heads = _run(["git", "bundle", "list-heads", "environment/repo.bundle"], task).stdout
        assert heads.split()[0] == meta["mutant_commit"]
        dockerfile = (task / "environment" / "Dockerfile").read_text()
        assert f"FROM python:{sys.version_info.major}.{sys.version_info.minor}-slim" in dockerfile
        assert "RUN git clone -q /tmp/repo.bundle /app" in dockerfile
        assert "WORKDIR /app" in dockerfile
        assert os.access(task / "tests" / "test.sh", os.X_OK)
        assert os.access(task / "solution" / "solve.sh", os.X_OK)


def _workspace(task: Path, where: Path) -> Path:
    """What the Dockerfile builds, without Docker: a clone of the bundle at the mutant commit."""
    bundle = task / "environment" / "repo.bundle"
    assert _run(["git", "clone", "-q", str(bundle), str(where)], task).returncode == 0
    return where


def _verify(task: Path, workspace: Path, rewards: Path) -> tuple[int, str]:
    done = _run(
        ["bash", str(task / "tests" / "test.sh")], workspace,
        env=_env(GREENLOOP_REWARD_DIR=str(rewards)),
    )  # fmt: skip
    return done.returncode, (rewards / "reward.txt").read_text().strip()


def _test_script_fails_on_the_mutant_and_passes_after_the_solution(
    tasks: list[Path], tmp_path: Path
) -> None:
    for task in tasks:
        workspace = _workspace(task, tmp_path / task.name)
        assert _verify(task, workspace, tmp_path / f"{task.name}-before") == (1, "0")

        solved = _run(["bash", str(task / "solution" / "solve.sh")], workspace)

        assert solved.returncode == 0, solved.stderr
        assert _verify(task, workspace, tmp_path / f"{task.name}-after") == (0, "1")


def _an_agent_that_guts_the_tests_earns_no_reward(task: Path, tmp_path: Path) -> None:
    workspace = _workspace(task, tmp_path / "gutted")
    (workspace / "tests" / "test_more.py").write_text("def test_nothing():\n    pass\n")

    assert _verify(task, workspace, tmp_path / "rewards") == (1, "0")
    assert "def test_nothing" not in (workspace / "tests" / "test_more.py").read_text()


def test_export_runs_no_agent_and_names_the_formats_it_knows(tmp_path: Path) -> None:
    greenloop = [sys.executable, "-m", "greenloop", "bench"]
    unknown = _run([*greenloop, "--export", "terminal-bench", str(tmp_path / "t")], tmp_path)
    with_agent = _run([*greenloop, "--export", "harbor", str(tmp_path), "--agent", "x"], tmp_path)
    neither = _run([*greenloop, "--mutants", "2"], tmp_path)

    assert unknown.returncode == 2
    assert "--export: unknown format 'terminal-bench'; known: harbor" in unknown.stderr
    assert with_agent.returncode == 2
    assert "--export writes tasks and runs no agent" in with_agent.stderr
    assert neither.returncode == 2
    assert "bench needs --agent A (one or more) and --out DIR, or --export harbor DIR" in (
        neither.stderr
    )

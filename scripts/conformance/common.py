"""Shared parts of the conformance corpus (issue 10): manifests, checkouts, mutants, runs, case dirs.

Stdlib only. Every ecosystem module (python.py, node.py, native.py, ...) uses these functions and
provides, per runner name, a ``Truth`` function: given the run it re-runs the same command with the
runner's structured report (JUnit XML, ``--output json``, ``go test -json``, ...) and returns Facts.

Layout:
    tests/resources/real/projects/<project>.toml     the manifest (repo, pinned commit, install, run)
    tests/resources/real/<runner>/<project>-<n>/     case.json + case.txt (n = 0: unmodified baseline)
    /tmp/glreal/<project>                            the checkout (GLREAL_ROOT), mutants committed there
    /tmp/glreal-venv/<venv>                          the project's own environment (GLREAL_VENVS)
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import re
import shutil
import signal
import subprocess
import tomllib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / "tests" / "resources" / "real"
PROJECTS = REAL / "projects"
WORK = Path(os.environ.get("GLREAL_ROOT", "/tmp/glreal"))
VENVS = Path(os.environ.get("GLREAL_VENVS", "/tmp/glreal-venv"))
MIRROR = Path(os.environ.get("GLREAL_MIRROR", "/work/.mirror"))

# The same environment as scripts/capture_outputs/: no colours, no TTY, no inherited test options.
FORCED_ENV = {
    "NO_COLOR": "1",
    "CARGO_TERM_COLOR": "never",
    "MYPY_FORCE_TERMINAL_WIDTH": "2000",
    "PAGER": "cat",
    "TQDM_DISABLE": "1",
    "PIP_PROGRESS_BAR": "off",
    "GOPROXY": "off",
    "GOTOOLCHAIN": "local",
    "GOFLAGS": "",
    "npm_config_update_notifier": "false",
    "PYTHONDONTWRITEBYTECODE": "1",
    "LANG": "C.UTF-8",
}
DROPPED_ENV = {
    "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTHONPATH", "VIRTUAL_ENV", "COLUMNS", "LINES", "CI",
    "FORCE_COLOR", "CLICOLOR_FORCE", "NODE_OPTIONS", "RUSTFLAGS", "CARGO_TARGET_DIR",
    "MYPY_CACHE_DIR", "PYTHONSTARTUP", "PYTHONUNBUFFERED", "GITHUB_ACTIONS", "TF_BUILD",
    "JEST_WORKER_ID", "RUST_BACKTRACE", "RUST_LIB_BACKTRACE", "LC_ALL", "LC_MESSAGES", "LANGUAGE",
}  # fmt: skip
HEAD_CAP, TAIL_CAP = 64 * 1024, 512 * 1024  # greenloop's own process_capture.py cap
ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")
GIT_ENV = {
    "GIT_AUTHOR_NAME": "corpus",
    "GIT_AUTHOR_EMAIL": "corpus@example.invalid",
    "GIT_COMMITTER_NAME": "corpus",
    "GIT_COMMITTER_EMAIL": "corpus@example.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
}
VERDICTS = ("green", "failed", "env_failure", "killed", "untrusted", "timeout")


# ---- manifest ----


@dataclass(frozen=True, slots=True, kw_only=True)
class MutationSpec:
    file: str
    kind: str
    line: int | None = None
    """The line to mutate; without it the seed picks one of the file's candidate sites."""
    seed: int = 0
    note: str = ""
    """Why this site (e.g. "caller: a wrong constant passed down to ...")."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Runner:
    runner: str
    """The corpus directory: pytest, unittest, mypy, ruff, go-test, jest, ..."""
    argv: tuple[str, ...] | str
    """As the maintainers run it; a string runs under ``sh -c``. ``{venv}`` is the venv path."""
    truth: str
    """Which ground-truth function re-runs it with a structured report (see the ecosystem module)."""
    version: tuple[str, ...] | str
    timeout: float = 600.0
    cwd: str = "."
    mutations: tuple[MutationSpec, ...] = ()
    truth_argv: tuple[str, ...] | str | None = None
    """The second run, when it is not ``argv`` plus reporter flags (``{report}``: a file path)."""
    unset_env: tuple[str, ...] = ()
    """Forced variables this project's tests need absent (kleur expects colour by default)."""
    env: tuple[tuple[str, str], ...] = ()
    """Variables set for this runner's runs, over the forced ones (``GOFLAGS=-v``: what
    ``greenloop check`` sets for ``go test``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Project:
    name: str
    repo: str
    commit: str
    venv: str
    install: tuple[str, ...]
    """Shell commands run once in the checkout (``{venv}`` and ``{python}`` substituted)."""
    runners: tuple[Runner, ...]
    notes: str = ""

    @property
    def root(self) -> Path:
        return WORK / self.name

    @property
    def venv_path(self) -> Path:
        return VENVS / self.venv


def load_project(path: Path) -> Project:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    runners = tuple(_runner(r) for r in data["runners"])
    return Project(
        name=path.stem,
        repo=data["repo"],
        commit=data["commit"],
        venv=data.get("venv", path.stem),
        install=tuple(data.get("install", ())),
        runners=runners,
        notes=data.get("notes", ""),
    )


def _runner(data: dict[str, Any]) -> Runner:
    argv = data["argv"] if isinstance(data["argv"], str) else tuple(data["argv"])
    version = data["version"] if isinstance(data["version"], str) else tuple(data["version"])
    mutations = tuple(MutationSpec(**m) for m in data.get("mutations", ()))
    return Runner(
        runner=data["runner"],
        argv=argv,
        truth=data["truth"],
        version=version,
        timeout=float(data.get("timeout", 600)),
        cwd=data.get("cwd", "."),
        mutations=mutations,
        truth_argv=_argv_or_none(data.get("truth_argv")),
        unset_env=tuple(data.get("unset_env", ())),
        env=tuple(sorted(data.get("env", {}).items())),
    )


def _argv_or_none(value: Any) -> tuple[str, ...] | str | None:
    return value if value is None or isinstance(value, str) else tuple(value)


def load_projects(only: set[str] | None = None) -> list[Project]:
    paths = sorted(PROJECTS.glob("*.toml"))
    return [load_project(p) for p in paths if not only or p.stem in only]


# ---- checkout, install, mutate + commit ----


def git(root: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    done = subprocess.run(
        ["git", *args], cwd=root, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} in {root}: {done.stderr.strip()}")
    return done.stdout


def checkout(project: Project) -> Path:
    """A clean clone of the fetched snapshot at the pinned commit, on a local branch ``corpus``."""
    root = project.root
    if not (root / ".git").is_dir():
        source = MIRROR / project.repo.replace("/", "+") / "repo"
        if not source.is_dir():
            raise RuntimeError(f"{source} missing: fetch github:{project.repo} first")
        root.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", str(source), str(root)], check=True)
    git(root, "checkout", "-q", "-B", "corpus", project.commit)
    git(root, "reset", "-q", "--hard", project.commit)  # no `git clean`: installs generate files
    return root


def install(project: Project) -> None:
    """Run the manifest's install steps once per venv (a marker file records success)."""
    marker = project.venv_path / ".glreal-installed"
    if marker.exists():
        return
    for step in project.install:
        cmd = expand(step, project)
        done = subprocess.run(
            ["sh", "-c", cmd], cwd=project.root, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"install step failed: {cmd}\n{(done.stdout + done.stderr)[-2000:]}")
    marker.write_text("\n".join(project.install) + "\n", encoding="utf-8")


def expand(text: str, project: Project) -> str:
    return text.replace("{venv}", str(project.venv_path)).replace(
        "{python}", str(project.venv_path / "bin" / "python")
    )


def commit_mutation(root: Path, rel: str, line: int, after: str) -> None:
    """Write the one-line change and commit it: no diff in the work tree points at the site."""
    path = root / rel
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    ending = "\n" if lines[line - 1].endswith("\n") else ""
    lines[line - 1] = after + ending
    path.write_text("".join(lines), encoding="utf-8")
    # the project's own hooks (husky, lint-staged) must not run on, or refuse, a corpus commit
    git(root, "-c", "core.hooksPath=/dev/null", "commit", "-q", "-am", "Refactor")


# ---- running ----


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    argv: tuple[str, ...] | str
    exit_code: int
    """Negative -N: the process died from signal N (subprocess convention)."""
    stdout: str
    stderr: str
    timed_out: bool = False


def runner_env(project: Project, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in DROPPED_ENV}
    env.update(FORCED_ENV)
    env["VIRTUAL_ENV"] = str(project.venv_path)
    env["PATH"] = os.pathsep.join([str(project.venv_path / "bin"), env.get("PATH", "")])
    env.update(extra or {})
    return env


def run_env(project: Project, runner: Runner) -> dict[str, str]:
    """The environment of this runner's runs: runner_env, the runner's ``env``, less ``unset_env``."""
    env = runner_env(project, dict(runner.env))
    return {k: v for k, v in env.items() if k not in runner.unset_env}


def run(argv: tuple[str, ...] | str, cwd: Path, env: dict[str, str], timeout: float) -> Run:
    """Run with stdin closed, pipes (no TTY), a new session killed as a group on timeout."""
    shell = isinstance(argv, str)
    proc = subprocess.Popen(
        argv if shell else list(argv),
        cwd=cwd,
        env=env,
        shell=shell,
        executable="/bin/sh" if shell else None,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    return Run(
        argv=argv,
        exit_code=proc.returncode,
        stdout=out.decode("utf-8", "replace"),
        stderr=err.decode("utf-8", "replace"),
        timed_out=timed_out,
    )


def tool_version(runner: Runner, cwd: Path, env: dict[str, str]) -> str:
    done = run(runner.version, cwd, env, 120)
    text = (done.stdout.strip() or done.stderr.strip()).splitlines()
    return text[0].strip() if text else "unknown"


def cap(text: str) -> str:
    """Head 64 KiB + tail 512 KiB, as greenloop's process_capture.py keeps them."""
    data = text.encode("utf-8")
    if len(data) <= HEAD_CAP + TAIL_CAP:
        return text
    dropped = len(data) - HEAD_CAP - TAIL_CAP
    head = data[:HEAD_CAP].decode("utf-8", "ignore")
    tail = data[-TAIL_CAP:].decode("utf-8", "ignore")
    return f"{head}\n[... {dropped} bytes dropped by the corpus capture ...]\n{tail}"


# ---- facts and cases ----


@dataclass(frozen=True, slots=True, kw_only=True)
class Facts:
    """Ground truth from the runner's own structured report, never from greenloop's parsers."""

    verdict: str
    failing_ids: tuple[str, ...] = ()
    error_type: str | None = None
    message: str | None = None
    frame: str | None = None
    counts: dict[str, int] | None = None
    ground_truth: str = ""
    """How the facts were obtained (the command and report)."""


Truth = Callable[[Project, Runner, Run, "Mutation | None"], Facts]
Peer = Callable[[Project, Runner], dict[str, Any]]
"""Another tool's output for the same checkout (e.g. pytest-receptor), kept under ``peers``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Mutation:
    file: str
    line: int
    kind: str
    before: str
    after: str
    note: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    project: Project
    runner: Runner
    n: int
    run: Run
    facts: Facts
    mutation: Mutation | None
    version: str
    repo_modules: tuple[str, ...] = field(default=())
    repo_files: tuple[str, ...] = field(default=())
    """The repository's tracked .py files: installed.own_copies names a frame in an installed
    copy as the repository's file only where it exists (tests/case_files.py lays them out)."""
    manifests: tuple[tuple[str, str], ...] = field(default=())
    """The Python manifests' texts (pyproject.toml, setup.cfg, tox.ini, requirements…): where the
    verdict names a plugin or package the project declares."""

    @property
    def dir(self) -> Path:
        return REAL / self.runner.runner / f"{self.project.name}-{self.n}"


def unverified(facts: Facts, text: str) -> list[str]:
    """Facts that the output does not contain verbatim (ANSI stripped)."""
    plain = ANSI_RE.sub("", text)
    missing = [f"failing_ids:{i}" for i in facts.failing_ids if i not in plain]
    for key in ("error_type", "message"):
        value = getattr(facts, key)
        if value and value not in plain:
            missing.append(f"{key}:{value}")
    if facts.frame and not frame_in(facts.frame, plain):
        missing.append(f"frame:{facts.frame}")
    return missing


def frame_in(frame: str, plain: str) -> bool:
    path, _, line = frame.rpartition(":")
    base = path.rsplit("/", 1)[-1]
    full = (f"{path}:{line}", f'{path}", line {line}')
    # a basename alone, not the end of another path: `test/index.js:90` is not `src/index.js:90`
    # (tape/mri-2), `lite.js:19` is not `lite.js:192` (uvu/dequal-2)
    bare = (f"{base}:{line}", f'{base}", line {line}')
    ends = [re.search(re.escape(p) + r"(?!\d)", plain) for p in full]
    ends += [re.search(r"(?<![\w/.-])" + re.escape(p) + r"(?!\d)", plain) for p in bare]
    return f"{path}({line}," in plain or any(m is not None for m in ends)


def write_case(case: Case, date: str | None = None) -> Path:
    out, err = cap(case.run.stdout), cap(case.run.stderr)
    facts = asdict(case.facts)
    ground_truth = facts.pop("ground_truth")
    facts["failing_ids"] = list(case.facts.failing_ids)
    record = {
        "tool": case.runner.runner,
        "case": f"{case.project.name}-{case.n}",
        "project": case.project.name,
        "repo": case.project.repo,
        "commit": case.project.commit,
        "argv": case.run.argv if isinstance(case.run.argv, str) else list(case.run.argv),
        "cwd_placeholder": str(case.project.root / case.runner.cwd).rstrip("/."),
        "exit_code": case.run.exit_code,
        "stdout": out,
        "stderr": err,
        "tool_version": case.version,
        "captured_at": date or _dt.date.today().isoformat(),
        "env": {**FORCED_ENV, **dict(case.runner.env)},
        "timed_out": case.run.timed_out,
        "timeout_s": case.runner.timeout if case.run.timed_out else None,
        "repo_modules": list(case.repo_modules),
        "repo_files": (
            dict.fromkeys(case.repo_files, "") | dict(case.manifests)
            if case.manifests
            else list(case.repo_files)
        ),
        "mutation": asdict(case.mutation) if case.mutation else None,
        "facts": facts,
        "facts_unverified": unverified(case.facts, out + "\n" + err),
        "ground_truth": ground_truth,
    }
    case.dir.mkdir(parents=True, exist_ok=True)
    write_json(case.dir / "case.json", record)
    sep = "" if (not out or out.endswith("\n")) else "\n"
    (case.dir / "case.txt").write_text(out + sep + err, encoding="utf-8")
    return case.dir


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def read_case(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def clear_cases(project: Project, runner: Runner) -> None:
    """Drop the old case dirs of this project and runner (a regeneration may make fewer)."""
    for old in (REAL / runner.runner).glob(f"{project.name}-*"):
        if old.is_dir() and old.name.rpartition("-")[2].isdigit():
            shutil.rmtree(old)


def repo_files(root: Path) -> tuple[str, ...]:
    """The tracked .py files, relative to ``root`` (the runner's directory)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--", "*.py"], cwd=root, capture_output=True, check=True
    )
    return tuple(sorted(os.fsdecode(p) for p in listed.stdout.split(b"\0") if p))


# where a Python project declares what its tests need (the runner's directory, tracked files only)
MANIFESTS = ("pyproject.toml", "setup.cfg", "tox.ini", "pytest.ini", ".pytest.ini", "*requirements*.txt")


def manifests(root: Path) -> tuple[tuple[str, str], ...]:
    """The tracked Python manifests in ``root`` with their texts."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--", *MANIFESTS], cwd=root, capture_output=True, check=True
    )
    names = sorted(os.fsdecode(p) for p in listed.stdout.split(b"\0") if p and b"/" not in p)
    return tuple((name, (root / name).read_text(encoding="utf-8")) for name in names)


def repo_modules(root: Path) -> tuple[str, ...]:
    """Top-level names the repository provides (root and src/): verify.repo_modules' rule."""
    names: set[str] = set()
    for base in (root, root / "src"):
        if not base.is_dir():
            continue
        for entry in base.iterdir():
            if entry.name.startswith("."):
                continue
            if entry.is_dir():
                names.add(entry.name)
            elif entry.name.endswith(".py"):
                names.add(entry.name[:-3])
    return tuple(sorted(names))

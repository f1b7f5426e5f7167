"""``greenloop bench --export harbor DIR``: each selected mutant as a task in Harbor's layout.

Harbor (harbor-framework/harbor, PyPI ``harbor``) reads a task directory as::

    task.toml               name, metadata, timeouts (what Harbor reads on the host)
    instruction.md          what the agent is told: greenloop's task text and the mutant's digest
    environment/Dockerfile  the agent's container: the repository at the mutant commit (in /app)
    tests/test.sh           run from the working directory after the agent; writes the reward
    solution/solve.sh       the reference solution: the inverse edit

The mutants are those ``greenloop bench`` would run with the same seed (same selection, same ids);
no agent runs. The Dockerfile is written, never built here; ``tests/test.sh`` restores the
project's test files from the mutant commit before it runs the verifier (an agent that edits a test
gets no reward for it), and writes ``1`` or ``0`` to ``/logs/verifier/reward.txt``.
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from greenloop import git
from greenloop.bench import seed
from greenloop.bench.mutate import Mutant
from greenloop.config import Config, load_config
from greenloop.errors import FatalError
from greenloop.loop.trust import is_test_path
from greenloop.redact import redact
from greenloop.verify.classify import Verdict

FORMAT = "harbor"
REWARD_DIR = "/logs/verifier"
APP = "/app"
SCHEMA_VERSION = "1.4"  # harbor 0.25's TaskConfig
PYTHON_TOOLS = ("pytest",)


@dataclass(frozen=True, slots=True, kw_only=True)
class HarborTask:
    mutant: Mutant
    path: Path


def export_harbor(
    repo: Path | str,
    *,
    dest: Path | str,
    work: Path | str | None = None,
    mutants: int = 10,
    seed_value: int = 0,
    command: Sequence[str] = (),
    max_failing: int = 5,
    overrides: Mapping[str, Any] | None = None,
    setup: str | None = None,
) -> tuple[HarborTask, ...]:
    """Select mutants as ``run_bench`` does and write each as ``dest/<mutant id>/``."""
    from greenloop.loop.checking import check, resolve_cascade

    root = Path(repo).resolve()
    dest = Path(dest).resolve()
    if git.status_paths(root):
        raise FatalError("the repository has uncommitted changes: bench starts from a clean HEAD")
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    config = load_config(root, {k: v for k, v in given.items() if k == "timeout"})
    with tempfile.TemporaryDirectory(prefix="greenloop-harbor-") as tmp:
        base = Path(work).resolve() if work else Path(tmp)
        clean = seed.prepare_clean(root, base / "clean", setup)
        baseline, _ = check(clean, command, config=config)
        if baseline.verdict is not Verdict.GREEN:
            raise FatalError(
                f"the verifier must be green at HEAD to seed bugs (it is {baseline.verdict.value})"
            )
        stages = resolve_cascade(clean, config, command).stages
        commands = [_portable(s.command) for s in stages if not s.fix]
        candidates = seed.candidate_mutants(
            clean, git.tracked_paths(root), [s.display for s in stages]
        )
        chosen = seed.select(
            clean, candidates, n=mutants, seed=seed_value, command=command, config=config,
            max_failing=max_failing,
        )  # fmt: skip
        dest.mkdir(parents=True, exist_ok=True)
        written = []
        for mutant in chosen.kept:
            with seed.applied(clean, mutant):
                _, digest = check(clean, command, config=config)
            repository = seed.seed_repository(root, mutant, base / "mutants" / mutant.id)
            spec = _Spec(
                mutant=mutant, project=root.name, commands=commands, digest=digest.text,
                seed_value=seed_value, config=config, given=given, setup=setup,
                head=git.rev_parse(root, "HEAD") or "",
            )  # fmt: skip
            written.append(HarborTask(mutant=mutant, path=_write_task(dest, repository, spec)))
    return tuple(written)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Spec:
    mutant: Mutant
    project: str
    commands: list[str]
    digest: str
    seed_value: int
    config: Config
    given: Mapping[str, Any]
    setup: str | None
    head: str


def _write_task(dest: Path, repository: Path, spec: _Spec) -> Path:
    """One task directory, written beside its final place and moved in whole."""
    final = dest / spec.mutant.id
    staging = dest / f".{spec.mutant.id}.tmp"
    if staging.exists():
        shutil.rmtree(staging)  # a half-written task of our own, from a killed export
    (staging / "environment").mkdir(parents=True)
    (staging / "tests").mkdir()
    (staging / "solution").mkdir()
    commit = git.rev_parse(repository, "HEAD") or ""
    git.git(repository, "bundle", "create", str(staging / "environment" / "repo.bundle"), "HEAD")
    tests = [p for p in git.tracked_paths(repository) if is_test_path(p)]
    files = {
        "task.toml": _task_toml(spec, commit),
        "instruction.md": _instruction(spec),
        "environment/Dockerfile": _dockerfile(spec),
        "tests/test.sh": _test_sh(spec, commit, tests),
        "solution/solve.sh": _solve_sh(spec, repository),
    }
    for rel, text in files.items():
        path = staging / rel
        path.write_text(redact(text), encoding="utf-8")
        if rel.endswith(".sh"):
            path.chmod(0o755)
    if final.exists():
        shutil.rmtree(final)  # an earlier export of the same mutant: the same content again
    os.replace(staging, final)
    return final


def _task_toml(spec: _Spec, commit: str) -> str:
    m = spec.mutant
    verifier_s = float(spec.given.get("timeout") or spec.config.timeout) * max(
        1, len(spec.commands)
    )
    agent_s = float(spec.given.get("max_time") or spec.config.max_time)
    name = _slug(spec.project)
    fields = {
        "source": "greenloop bench",
        "project": spec.project,
        "project_commit": spec.head,
        "mutant_commit": commit,
        "mutant_id": m.id,
        "path": m.path,
        "line": m.line,
        "column": m.col,
        "kind": m.kind,
        "seed": spec.seed_value,
        "verifier": spec.commands,
    }
    meta = "\n".join(f"{key} = {_toml(value)}" for key, value in fields.items())
    return (
        f'schema_version = "{SCHEMA_VERSION}"\n'
        f"# the verifier runs in a fresh container of the same image, the agent's {APP} copied in\n"
        f"artifacts = {_toml([APP])}\n\n"
        "[task]\n"
        f"name = {_toml(f'greenloop-bench/{name}-{m.id}')}\n"
        f"description = {_toml(f'A single-site bug ({m.kind}) seeded in {m.path}:{m.line}')}\n"
        f"keywords = {_toml(['greenloop-bench', m.kind, _language(m.path)])}\n\n"
        f"[metadata]\n{meta}\n\n"
        f'[verifier]\ntimeout_sec = {verifier_s:.1f}\nenvironment_mode = "separate"\n\n'
        f"[agent]\ntimeout_sec = {agent_s:.1f}\n\n"
        f"[environment]\nbuild_timeout_sec = {seed.SETUP_TIMEOUT_S:.1f}\n"
    )


def _instruction(spec: _Spec) -> str:
    from greenloop.loop.loop import DEFAULT_TASK

    verifier = "; ".join(f"`{c}`" for c in spec.commands)
    return (
        f"# Fix the failing tests of {spec.project}\n\n"
        f"{DEFAULT_TASK}\n\n"
        f"The repository is in `{APP}`. The verifier ({verifier}) fails now; this is its digest:\n\n"
        f"{spec.digest.strip()}\n"
    )


def _dockerfile(spec: _Spec) -> str:
    lines = [
        f"FROM {_image(spec.mutant.path)}",
        "RUN apt-get update && apt-get install -y --no-install-recommends git ca-certificates "
        "&& rm -rf /var/lib/apt/lists/*",
        "COPY repo.bundle /tmp/repo.bundle",
        f"RUN git clone -q /tmp/repo.bundle {APP} && rm /tmp/repo.bundle",
        f"WORKDIR {APP}",
    ]
    if spec.setup:
        lines.append(f"RUN {spec.setup}")
    elif _language(spec.mutant.path) == "python":
        pins = [f"{tool}=={version}" for tool, version in _python_tools(spec.commands)]
        if pins:
            lines.append(f"RUN pip install --no-cache-dir {' '.join(pins)}")
    return (
        f"# greenloop bench mutant {spec.mutant.id}: {spec.project} at the mutant commit\n"
        + "\n".join(lines)
        + "\n"
    )


def _test_sh(spec: _Spec, commit: str, tests: Sequence[str]) -> str:
    restore = ""
    if tests:
        quoted = " ".join(shlex.quote(t) for t in tests)
        restore = (
            "# the project's test files as the mutant commit has them: an edited test earns nothing\n"
            f"git checkout -q {commit} -- {quoted}\n"
        )
    checks = "\n".join(f"{c} || status=1" for c in spec.commands)
    return (
        "#!/usr/bin/env bash\n"
        f"# greenloop bench mutant {spec.mutant.id}: reward 1 when the verifier passes, else 0.\n"
        "# Harbor runs it from the task's working directory.\n"
        "set -u\n"
        f'reward_dir="${{GREENLOOP_REWARD_DIR:-{REWARD_DIR}}}"\n'
        'mkdir -p "$reward_dir"\n'
        f"{restore}"
        "status=0\n"
        f"{checks}\n"
        'if [ "$status" -eq 0 ]; then echo 1 >"$reward_dir/reward.txt"; '
        'else echo 0 >"$reward_dir/reward.txt"; fi\n'
        'exit "$status"\n'
    )


def _solve_sh(spec: _Spec, repository: Path) -> str:
    m = spec.mutant
    mutated = (repository / m.path).read_text(encoding="utf-8")
    fixed = replace(m, old=m.new, new=m.old).apply(mutated)  # the answer bench writes
    inverse = "".join(
        difflib.unified_diff(
            mutated.splitlines(keepends=True),
            fixed.splitlines(keepends=True),
            f"a/{m.path}",
            f"b/{m.path}",
        )
    )
    marker = "GREENLOOP_INVERSE_EDIT"
    return (
        "#!/usr/bin/env bash\n"
        f"# The reference solution of mutant {m.id}: the inverse of the seeded edit.\n"
        "set -euo pipefail\n"
        f"git apply - <<'{marker}'\n{inverse}{marker}\n"
    )


def _portable(command: tuple[str, ...] | str) -> str:
    """The stage as a shell line that runs in the container (a venv's python: ``python``)."""
    if isinstance(command, str):
        return command
    argv = list(command)
    if argv and os.path.isabs(argv[0]) and re.fullmatch(r"python[0-9.]*", Path(argv[0]).name):
        argv[0] = "python"
    return shlex.join(argv)


def _language(path: str) -> str:
    suffix = Path(path).suffix
    if suffix == ".py":
        return "python"
    if suffix == ".go":
        return "go"
    if suffix == ".rs":
        return "rust"
    return "javascript"


def _image(path: str) -> str:
    language = _language(path)
    if language == "python":
        return f"python:{sys.version_info.major}.{sys.version_info.minor}-slim"
    return {"go": "golang:1.22", "rust": "rust:1-slim"}.get(language, "node:22-slim")


def _python_tools(commands: Sequence[str]) -> list[tuple[str, str]]:
    from importlib import metadata

    found = []
    for tool in PYTHON_TOOLS:
        if any(re.search(rf"\b{tool}\b", c) for c in commands):
            try:
                found.append((tool, metadata.version(tool)))
            except metadata.PackageNotFoundError:
                continue
    return found


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip(".-") or "project"


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    text = str(value)
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'

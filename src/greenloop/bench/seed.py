"""Select mutants the verifier catches (trusted failures), then give each its own repository:
one commit of the mutated tree, no history, no reflog, no original file anywhere in it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from greenloop import git
from greenloop.bench import sources
from greenloop.bench.mutate import Mutant, draw
from greenloop.config import Config
from greenloop.errors import FatalError
from greenloop.verify.classify import Verdict

SETUP_TIMEOUT_S = 1800.0
FIXED_DATE = "2000-01-01T00:00:00+00:00"  # same seed, same commit: the id never says when


@dataclass(frozen=True, slots=True, kw_only=True)
class Selection:
    kept: tuple[Mutant, ...]
    tried: int
    candidates: int


def candidate_mutants(tree: Path, files: Sequence[str], exclude: Sequence[str]) -> list[Mutant]:
    """Every mutation of the source files among ``files`` (the verifier's commands in ``exclude``
    name files of its own: those are left alone too)."""
    named = {token for command in exclude for token in command.split()}
    found: list[Mutant] = []
    for rel in sources.source_files(files, named):
        text = (tree / rel).read_text(encoding="utf-8", errors="replace")
        found += sources.mutants_of(rel, text)
    return found


def select(
    tree: Path,
    candidates: Sequence[Mutant],
    *,
    n: int,
    seed: int,
    command: Sequence[str],
    config: Config,
    max_failing: int,
) -> Selection:
    """Draw with the seed; keep a mutant when the verifier fails with it in a trusted way."""
    from greenloop.loop.checking import check
    from greenloop.loop.history import failing_count

    kept: list[Mutant] = []
    tried = 0
    for mutant in draw(candidates, len(candidates), seed):
        if len(kept) == n:
            break
        tried += 1
        with applied(tree, mutant):
            result, _ = check(tree, command, config=config)
        if result.verdict is Verdict.FAILED and failing_count(result) <= max_failing:
            kept.append(mutant)
    return Selection(kept=tuple(kept), tried=tried, candidates=len(candidates))


@contextmanager
def applied(tree: Path, mutant: Mutant) -> Iterator[None]:
    """The mutant written into ``tree`` for the block; the original back after it."""
    path = tree / mutant.path
    original = path.read_text(encoding="utf-8")
    _write_fresh(path, mutant.apply(original))
    try:
        yield
    finally:
        _write_fresh(path, original)


def _write_fresh(path: Path, text: str) -> None:
    """Write ``text`` with no stale bytecode left to stand in for it.

    Python trusts a ``__pycache__`` entry whose recorded source mtime (whole seconds) and size
    match: a same-length mutant (``<`` for ``>``) written within the second of the previous one
    ran the previous one's bytecode, so a rerun with the same seed could keep other mutants."""
    path.write_text(text, encoding="utf-8")
    if path.suffix == ".py":
        for cached in (path.parent / "__pycache__").glob(f"{path.stem}.*.pyc"):
            cached.unlink(missing_ok=True)


def export_head(repo: Path, dest: Path) -> Path:
    """The committed tree at HEAD, without .git (``git archive``)."""
    dest.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as tmp:
        tar = Path(tmp) / "head.tar"
        git.git(repo, "archive", "--format=tar", "-o", str(tar), "HEAD")
        shutil.unpack_archive(tar, dest, format="tar")
    return dest


def seed_repository(repo: Path, mutant: Mutant, dest: Path) -> Path:
    """A new repository holding one commit: the tree at ``repo``'s HEAD with the mutant applied
    (from git, so nothing a setup installed in the clean tree comes along)."""
    export_head(repo, dest)
    path = dest / mutant.path
    path.write_text(mutant.apply(path.read_text(encoding="utf-8")), encoding="utf-8")
    env = {
        **git.no_git_env(),
        "GIT_AUTHOR_DATE": FIXED_DATE,
        "GIT_COMMITTER_DATE": FIXED_DATE,
        "GIT_AUTHOR_NAME": "greenloop bench",
        "GIT_AUTHOR_EMAIL": "bench@greenloop.invalid",
        "GIT_COMMITTER_NAME": "greenloop bench",
        "GIT_COMMITTER_EMAIL": "bench@greenloop.invalid",
    }
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "bench task"]):
        done = subprocess.run(["git", *args], cwd=dest, env=env, capture_output=True, check=False)
        if done.returncode != 0:
            raise FatalError(f"git {args[0]} failed in {dest}: {done.stderr.decode().strip()}")
    _forget(dest)
    return dest


def prepare_clean(repo: Path, dest: Path, setup: str | None) -> Path:
    """The tree the mutants are selected in: HEAD exported, then the user's setup run in it
    (``npm ci``, ``go mod download`` …); kept across reruns of the same DIR."""
    from greenloop.processes.process import run_command

    if dest.exists():
        return dest
    staging = dest.with_name(dest.name + ".tmp")
    if staging.exists():
        shutil.rmtree(staging)
    export_head(repo, staging)
    if setup:
        done = run_command(setup, cwd=staging, timeout_s=SETUP_TIMEOUT_S)
        if done.exit_code != 0:
            tail = done.merged.strip().splitlines()[-3:]
            raise FatalError(f"the setup failed (exit {done.exit_code}): {' | '.join(tail)}")
    os.replace(staging, dest)
    return dest


def _forget(repo: Path) -> None:
    """No reflog: nothing in the repository points at any state but the one commit."""
    logs = repo / ".git" / "logs"
    if logs.exists():
        shutil.rmtree(logs)


def write_answer(directory: Path, mutant: Mutant) -> Path:
    """The inverse edit, outside every workspace (for an oracle agent, and for the report)."""
    directory.mkdir(parents=True, exist_ok=True)
    inverse = {**asdict(mutant), "old": mutant.new, "new": mutant.old, "id": mutant.id}
    path = directory / f"{mutant.id}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(inverse, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path

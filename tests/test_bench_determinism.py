"""``greenloop bench`` picks the same mutants for the same seed and commit, every time (issue 28)."""

from __future__ import annotations

import sys
from pathlib import Path

from batch_fixtures import make_project
from greenloop import git
from greenloop.bench import seed
from greenloop.config import Config

# A developer's Python writes __pycache__ (this sandbox sets PYTHONDONTWRITEBYTECODE; CI may not).
WRITES_BYTECODE = f"env -u PYTHONDONTWRITEBYTECODE {sys.executable}"


def _select(root: Path, command: tuple[str, ...], n: int, seed_value: int = 7) -> list[str]:
    candidates = seed.candidate_mutants(root, git.tracked_paths(root), [])
    chosen = seed.select(
        root, candidates, n=n, seed=seed_value, command=command, config=Config(), max_failing=1
    )
    return [m.id for m in chosen.kept]


def test_selection_runs_each_mutant_not_the_bytecode_of_one_written_in_the_same_second(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path)
    # Every version of lib.py carries one mtime, as same-second writes (or a filesystem with
    # whole-second timestamps) give it: Python then trusts the first mutant's cached bytecode
    # for every later mutant of the same length.
    same_second = ("sh", "-c", f"touch -d @1000000000 lib.py && {WRITES_BYTECODE} test_lib.py")
    no_bytecode = (sys.executable, "-B", "test_lib.py")

    assert _select(root, same_second, n=50) == _select(root, no_bytecode, n=50)


def test_the_same_seed_selects_the_same_mutants_twenty_times(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    command = ("sh", "-c", f"{WRITES_BYTECODE} test_lib.py")  # as a project's own run does

    picks = {tuple(_select(root, command, n=3)) for _ in range(20)}

    assert len(picks) == 1
    (only,) = picks
    assert len(only) == 3

"""Python's cached bytecode of the files an edit changed, dropped before the next verification.

Python reuses a ``__pycache__`` entry whose recorded source size and modification second match the
source file. An edit that keeps a file's size within the second a run compiled it (a fast agent's
``-`` for ``+``, a rollback right after a short run) would run the old code: a wrong verdict, a
false green at worst. Dropping the entries of the changed files costs their compilation only."""

from __future__ import annotations

import contextlib
import glob
from collections.abc import Iterable
from pathlib import Path


def drop_stale(root: Path, paths: Iterable[str]) -> int:
    """Remove the cached bytecode of each ``.py`` file in ``paths`` (repository-relative)."""
    dropped = 0
    for rel in paths:
        if not rel.endswith(".py"):
            continue
        source = root / rel
        pattern = str(source.parent / "__pycache__" / f"{glob.escape(source.stem)}.*.pyc")
        for cached in glob.glob(pattern):
            with contextlib.suppress(OSError):
                Path(cached).unlink()
                dropped += 1
    return dropped

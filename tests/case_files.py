"""The captured project's own files, laid out again for a case (tests/resources/real/*/case.json).

A case captured in ``cwd_placeholder`` (``/tmp/glreal/<project>``) names the repository's files in
``repo_files`` when greenloop's verdict depends on them existing: ``installed.own_copies`` names a
frame in a tox or nox env's installed copy as the repository's file only where the repository has
that file. The files are created empty in a temporary directory, so a case checks the same on a
machine that never had the project's checkout.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def project_root(data: dict[str, Any]) -> Iterator[Path]:
    """A directory holding the case's ``repo_files`` (empty), or its placeholder when it has none."""
    files = data.get("repo_files")
    if not files:
        yield Path(data["cwd_placeholder"])
        return
    with tempfile.TemporaryDirectory(prefix="greenloop-case-") as tmp:
        for name in files:
            path = Path(tmp, name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
        yield Path(tmp)

"""The captured project's own files, laid out again for a case (tests/resources/real/*/case.json).

A case captured in ``cwd_placeholder`` (``/tmp/glreal/<project>``) keeps the repository's files that
greenloop's verdict reads in ``repo_files``: a list of paths (``installed.own_copies`` names a frame in
a tox or nox env's installed copy as the repository's file only where the repository has that file;
capture.py), or a mapping of paths to their text (package.json's name and exports, which tell a JS
import of the project's own unbuilt package; capture_verdict_cases.py). They are written into a
temporary directory, listed files empty, so a case checks the same on a machine that never had the
project's checkout.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def project_root(data: dict[str, Any]) -> Iterator[Path | None]:
    """A directory holding the case's ``repo_files``, or None when it has none."""
    files = data.get("repo_files")
    if not files:
        yield None
        return
    texts: dict[str, str] = files if isinstance(files, dict) else dict.fromkeys(files, "")
    with tempfile.TemporaryDirectory(prefix="greenloop-case-") as tmp:
        for name, text in texts.items():
            path = Path(tmp, name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        yield Path(tmp)

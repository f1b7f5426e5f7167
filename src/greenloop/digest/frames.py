"""Which frames of a traceback are the project's own (not libraries, not the test framework)."""

from __future__ import annotations

import re
from pathlib import Path

from greenloop.parsers.model import Failure, Frame

_NOT_PROJECT = re.compile(
    r"(?:^|/)(?:site-packages|dist-packages|\.venv|venv|node_modules|\.tox|\.nox|\.cargo|rustc)/"
    r"|^<|^/usr/lib/|^/usr/local/lib/|/lib/python\d|/_pytest/|/pluggy/|^node:|^internal/"
)


def project_frame(f: Failure, root: Path) -> Frame | None:
    """The deepest frame inside the repository and outside libraries and the test framework."""
    for frame in reversed(f.frames):
        if is_project(frame.file, root):
            return frame
    return None


def is_project(path: str, root: Path) -> bool:
    if not path or _NOT_PROJECT.search(path):
        return False
    if path.startswith("/"):
        return path.startswith(str(root) + "/")
    return True


def relative(path: str, root: Path) -> str:
    prefix = str(root) + "/"
    return path[len(prefix) :] if path.startswith(prefix) else path


def first_location(f: Failure, root: Path) -> tuple[str, int | None] | None:
    frame = project_frame(f, root)
    if frame:
        return relative(frame.file, root), frame.line
    return (relative(f.file, root), f.line) if f.file else None

"""Which frames of a traceback are the project's own (not libraries, not the test framework)."""

from __future__ import annotations

import re
from pathlib import Path

from greenloop.parsers.model import Failure, Frame, Kind

# Installed code, wherever it lies. Not pytest's or pluggy's names: inside their own repositories
# (src/pluggy/_hooks.py) those are the project; installed, site-packages already says so.
# `internal/…js` is node ≤ 14's own code; a Go module's internal/ packages are the project's.
_NOT_PROJECT = re.compile(
    r"(?:^|/)(?:site-packages|dist-packages|\.venv|venv|node_modules|\.tox|\.nox|\.cargo|rustc)/"
    r"|^<|^/usr/lib/|^/usr/local/lib/|/lib/python\d|^node:|^internal/\S*\.[cm]?js$"
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


def repo_location(f: Failure, root: Path) -> tuple[str, int | None, int | None] | None:
    """(path, line, column) inside the repository, as the text digest names it: the deepest project
    frame, else the failure's own place when that is the project's; None when neither is (a
    unittest failure whose own place is ``unittest/case.py``: an annotation there lands nowhere)."""
    frame = project_frame(f, root)
    own = (relative(f.file, root), f.line, f.column) if is_project(f.file, root) else None
    if frame is None:
        return own
    where = (relative(frame.file, root), frame.line, None)
    return own if own and own[:2] == where[:2] else where


def project_chain(f: Failure, root: Path, keep: int = 4) -> tuple[list[Frame], int]:
    """The project's frames, innermost first: the last ``keep - 1`` and the outermost (the test).

    The mutated line is often a caller of the line that raised (a wrong value passed down), so
    the frames above the deepest one are shown too. Returns the frames and how many were skipped.
    """
    own = [frame for frame in f.frames if is_project(frame.file, root)]
    if len(own) <= keep:
        return own[::-1], 0
    return [*own[:-keep:-1], own[0]], len(own) - keep


def describe_frame(frame: Frame, root: Path, named: str = "") -> str:
    """``path:line in func: source`` on one line; no `` in func`` when ``named`` (the test) is it."""
    loc = relative(frame.file, root) + (f":{frame.line}" if frame.line else "")
    fn = f" in {frame.function}" if frame.function and frame.function != named else ""
    source = frame.source.strip()
    return f"{loc}{fn}: {source}" if source else f"{loc}{fn}"


def named_function(f: Failure) -> str:
    """The test function a test's id names (``a.py::C::test_x[1]``, ``pkg.C.test_x``): said once."""
    if f.kind is not Kind.TEST:
        return ""
    return re.split(r"::|[./ ]", f.id.split("[", 1)[0].rstrip())[-1]

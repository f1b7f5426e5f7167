"""The project's own installed copy, named as the repository's files.

tox and nox build the package and install it (not editable) into an env under the repository, so a
traceback through the project's code names ``.tox/py311/lib/python3.11/site-packages/pkg/mod.py``:
a library path to the digest, which hides it, though the file to edit is ``pkg/mod.py``. A frame in
such an env whose top-level name is one the repository provides is that repository file.

A copy installed without ``-e`` into the venv the tests run in is another matter: no run refreshes
it, so the tests see the package as it was at ``pip install .``, never the tree being verified.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection
from dataclasses import replace
from pathlib import Path

from greenloop.parsers.model import Failure, Frame, ParseResult

_INSTALLED = re.compile(
    r"(?:^|/)lib/python[\d.]+t?/site-packages/(?P<rest>(?P<top>[A-Za-z_]\w*)(?:/.+|\.py))$"
)


def own_copies(parsed: ParseResult, root: Path, modules: Collection[str]) -> ParseResult:
    """``parsed`` with every frame in the project's installed copy named as the repository file."""
    own = frozenset(modules)
    if not own:
        return parsed
    return replace(parsed, failures=tuple(_failure(f, root, own) for f in parsed.failures))


def repo_path(path: str, root: Path, modules: frozenset[str]) -> str:
    """``.tox/<env>/lib/python3.X/site-packages/pkg/mod.py`` (or any venv's) -> ``pkg/mod.py``
    (``src/pkg/mod.py`` in a src layout) when the repository has that file of its own package
    ``pkg``; any other path unchanged."""
    m = _INSTALLED.search(path)
    if m is None or m["top"] not in modules or m["top"] in _NOT_PACKAGES:
        return path
    src = root / "src"
    in_src = (src / m["top"]).is_dir() or (src / f"{m['top']}.py").is_file()
    mine = f"src/{m['rest']}" if in_src else m["rest"]
    return mine if (root / mine).is_file() else path


def _failure(f: Failure, root: Path, modules: frozenset[str]) -> Failure:
    frames = tuple(_frame(frame, root, modules) for frame in f.frames)
    file = repo_path(f.file, root, modules) if f.file else f.file
    if frames == f.frames and file == f.file:
        return f
    return replace(f, file=file, frames=frames)


def _frame(frame: Frame, root: Path, modules: frozenset[str]) -> Frame:
    file = repo_path(frame.file, root, modules)
    return frame if file == frame.file else replace(frame, file=file)


# top-level names a distribution may install that are no repository's package
_NOT_PACKAGES = frozenset({"tests", "test", "testing", "docs", "doc", "examples", "scripts"})
_MAX_FILES = 5000


def stale_copy(parsed: ParseResult, root: str) -> tuple[str, str, str] | None:
    """(module, its installed copy, the first repository file that differs from that copy) when
    the tests imported the project's own package from a copy installed without ``-e`` (``pip
    install .`` into the venv): the edits in the tree never reach them. tox and nox reinstall
    their copy on every run, so theirs is never stale."""
    for name, file in parsed.site_copies:
        parts = file.split("/")
        if name in _NOT_PACKAGES or ".tox" in parts or ".nox" in parts:
            continue
        copy = os.path.dirname(file) if os.path.basename(file) == "__init__.py" else file
        ours = _repository_copy(root, name, package=copy != file)
        changed = _first_difference(copy, ours, root) if ours else ""
        if changed:
            return name, copy, changed
    return None


def _repository_copy(root: str, name: str, *, package: bool) -> str:
    for home in (os.path.join(root, "src"), root):
        path = os.path.join(home, name) if package else os.path.join(home, f"{name}.py")
        if os.path.isdir(path) if package else os.path.isfile(path):
            return path
    return ""


def _first_difference(copy: str, ours: str, root: str) -> str:
    """The first ``.py`` file both trees hold whose bytes differ, relative to ``root``."""
    pairs = [(copy, ours)] if os.path.isfile(copy) else _pairs(copy, ours)
    for installed, mine in pairs:
        try:
            with open(installed, "rb") as a, open(mine, "rb") as b:
                if a.read() != b.read():
                    return os.path.relpath(mine, root)
        except OSError:
            continue  # only in the installed copy (a generated file): nothing to compare
    return ""


def _pairs(copy: str, ours: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for folder, dirs, files in os.walk(copy):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        rel = os.path.relpath(folder, copy)
        found.extend(
            (os.path.join(folder, f), os.path.normpath(os.path.join(ours, rel, f)))
            for f in sorted(files)
            if f.endswith(".py")
        )
        if len(found) > _MAX_FILES:
            break
    return found

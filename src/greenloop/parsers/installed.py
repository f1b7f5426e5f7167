"""The project's own installed copy, named as the repository's files.

tox and nox build the package and install it (not editable) into an env under the repository, so a
traceback through the project's code names ``.tox/py311/lib/python3.11/site-packages/pkg/mod.py``:
a library path to the digest, which hides it, though the file to edit is ``pkg/mod.py``. A frame in
such an env whose top-level name is one the repository provides is that repository file.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import replace
from pathlib import Path

from greenloop.parsers.model import Failure, Frame, ParseResult

_INSTALLED = re.compile(
    r"^\.(?:tox|nox)/[^/]+/lib/python[\d.]+t?/site-packages/"
    r"(?P<rest>(?P<top>[A-Za-z_]\w*)(?:/.+|\.py))$"
)


def own_copies(parsed: ParseResult, root: Path, modules: Collection[str]) -> ParseResult:
    """``parsed`` with every frame in the project's installed copy named as the repository file."""
    own = frozenset(modules)
    if not own:
        return parsed
    return replace(parsed, failures=tuple(_failure(f, root, own) for f in parsed.failures))


def repo_path(path: str, root: Path, modules: frozenset[str]) -> str:
    """``.tox/<env>/lib/python3.X/site-packages/pkg/mod.py`` -> ``pkg/mod.py`` (``src/pkg/mod.py``
    in a src layout) when ``pkg`` is the repository's own; any other path unchanged."""
    m = _INSTALLED.match(path.removeprefix(f"{root}/"))
    if m is None or m["top"] not in modules:
        return path
    src = root / "src"
    in_src = (src / m["top"]).is_dir() or (src / f"{m['top']}.py").is_file()
    return f"src/{m['rest']}" if in_src else m["rest"]


def _failure(f: Failure, root: Path, modules: frozenset[str]) -> Failure:
    frames = tuple(_frame(frame, root, modules) for frame in f.frames)
    file = repo_path(f.file, root, modules) if f.file else f.file
    if frames == f.frames and file == f.file:
        return f
    return replace(f, file=file, frames=frames)


def _frame(frame: Frame, root: Path, modules: frozenset[str]) -> Frame:
    file = repo_path(frame.file, root, modules)
    return frame if file == frame.file else replace(frame, file=file)

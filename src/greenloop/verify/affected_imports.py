"""The import-graph fallback of the affected tests (issue 29): with no coverage map, the test files
whose imports reach a changed module, following the project's own modules transitively.

Static and conservative where it can be: a module's ``import`` statements anywhere in it (inside
functions too), relative imports, the packages a dotted import passes through, and the conftest
files above a test (pytest imports them first). Searched under the repository root, ``src/`` and
the test's own folder (pytest's rootdir-relative ``sys.path`` insertion). What it cannot see (a
dynamic ``importlib`` call, a data file) the gate's full run still catches.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

_TEST = re.compile(r"(?:^|/)(?:test_[^/]*|[^/]*_test)\.py$")
MAX_FILES = 20000


def test_files(files: Iterable[str]) -> tuple[str, ...]:
    return tuple(f for f in files if _TEST.search(f))


def tests_reaching(root: Path, files: Sequence[str], changed: Sequence[str]) -> tuple[str, ...]:
    """The test files (repository-relative) that import, directly or not, one of ``changed``."""
    py = {f for f in files if f.endswith(".py")}
    if not changed or len(py) > MAX_FILES:
        return ()
    targets = set(changed)
    graph = _Graph(root, py)
    out = []
    for test in test_files(sorted(py)):
        start = [test, *_conftests(test, py)]
        if targets & graph.reach(start):
            out.append(test)
    return tuple(out)


def _conftests(test: str, py: set[str]) -> list[str]:
    parts = test.split("/")[:-1]
    return [
        c
        for i in range(len(parts) + 1)
        if (c := "/".join([*parts[:i], "conftest.py"]).lstrip("/")) in py
    ]


class _Graph:
    """Module files -> the project files they import, parsed once each."""

    def __init__(self, root: Path, py: set[str]) -> None:
        self.root = root
        self.py = py
        self.edges: dict[str, set[str]] = {}

    def reach(self, start: Sequence[str]) -> set[str]:
        seen = set(start)
        todo = list(start)
        while todo:
            for nxt in self._imports(todo.pop()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    def _imports(self, file: str) -> set[str]:
        if file in self.edges:
            return self.edges[file]
        found: set[str] = set()
        self.edges[file] = found
        try:
            tree = ast.parse((self.root / file).read_bytes(), filename=file)
        except (OSError, SyntaxError, ValueError):
            return found
        package = _package(file)
        bases = ["", "src", os.path.dirname(file)]
        for node in ast.walk(tree):
            for name in _names(node, package):
                found.update(self._resolve(name, bases))
        return found

    def _resolve(self, dotted: str, bases: list[str]) -> set[str]:
        """``a.b.c`` -> ``a/__init__.py``, ``a/b/__init__.py`` and ``a/b/c.py`` (or its package)."""
        parts = dotted.split(".")
        out: set[str] = set()
        for base in bases:
            prefix = f"{base}/" if base else ""
            for i in range(1, len(parts) + 1):
                stem = prefix + "/".join(parts[:i])
                for candidate in (f"{stem}.py", f"{stem}/__init__.py"):
                    if candidate in self.py:
                        out.add(candidate)
        return out


def _package(file: str) -> list[str]:
    return file.split("/")[:-1]


def _names(node: ast.AST, package: list[str]) -> list[str]:
    """The dotted module names an import statement may load (``from m import x``: m and m.x)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        keep = len(package) - (node.level - 1)
        if keep < 0:
            return []
        head = ".".join([*package[:keep], *([node.module] if node.module else [])])
    else:
        head = node.module or ""
    subs = [f"{head}.{a.name}" if head else a.name for a in node.names if a.name != "*"]
    return [n for n in (head, *subs) if n]

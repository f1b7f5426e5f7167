"""The import-graph fallback of the affected tests (issue 29): with no coverage map, the test files
whose imports reach a changed module, following the project's own modules transitively.

Static and conservative where it can be: a module's ``import`` statements anywhere in it (inside
functions too), relative imports, the packages a dotted import passes through, and the conftest
files above a test (pytest imports them first). Searched under the repository root, ``src/`` and
the test's own folder (pytest's rootdir-relative ``sys.path`` insertion). What it cannot see (a
dynamic ``importlib`` call, a data file) the gate's full run still catches.

Parsing every module is most of its cost (0.5 s of CPU on dateutil's 100 files, each run): with a
``cache`` file (in the repository's greenloop folder) a module's imports are kept under the hash of
its bytes, and only a module that changed is parsed again.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

_TEST = re.compile(r"(?:^|/)(?:test_[^/]*|[^/]*_test)\.py$")
MAX_FILES = 20000


def test_files(files: Iterable[str]) -> tuple[str, ...]:
    return tuple(f for f in files if _TEST.search(f))


def tests_reaching(  # not a test: ruff's PT rules go by the name
    root: Path,
    files: Sequence[str],
    changed: Sequence[str],
    *,
    cache: Path | None = None,  # noqa: PT028
) -> tuple[str, ...]:
    """The test files (repository-relative) that import, directly or not, one of ``changed``: the
    nearest first (fewest imports between the test and a changed module), so that the tests most
    likely to see the change run, and fail, first."""
    py = {f for f in files if f.endswith(".py")}
    if not changed or len(py) > MAX_FILES:
        return ()
    targets = set(changed)
    graph = _Graph(root, py, _load(cache))
    found: list[tuple[int, str]] = []
    for test in test_files(sorted(py)):
        hops = graph.distance([test, *_conftests(test, py)], targets)
        if hops is not None:
            found.append((hops, test))
    if cache is not None and graph.parsed:
        _save(cache, graph.known)
    return tuple(test for _, test in sorted(found))


def _load(cache: Path | None) -> dict[str, list[str]]:
    """hash of a module's bytes -> the dotted names its imports may load."""
    try:
        data = json.loads(cache.read_text(encoding="utf-8")) if cache else {}
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save(cache: Path, known: dict[str, list[str]]) -> None:
    with contextlib.suppress(OSError):
        cache.parent.mkdir(parents=True, exist_ok=True)
        partial = cache.with_name(f".{cache.name}.{os.getpid()}")
        partial.write_text(json.dumps(known), encoding="utf-8")
        partial.replace(cache)


def _conftests(test: str, py: set[str]) -> list[str]:
    parts = test.split("/")[:-1]
    return [
        c
        for i in range(len(parts) + 1)
        if (c := "/".join([*parts[:i], "conftest.py"]).lstrip("/")) in py
    ]


class _Graph:
    """Module files -> the project files they import, parsed once each."""

    def __init__(self, root: Path, py: set[str], known: dict[str, list[str]]) -> None:
        self.root = root
        self.py = py
        self.edges: dict[str, set[str]] = {}
        self.known = known
        self.parsed = 0

    def distance(self, start: Sequence[str], targets: set[str]) -> int | None:
        """Imports from ``start`` to the nearest of ``targets`` (0: one of them); None: none."""
        seen = set(start)
        frontier = list(start)
        hops = 0
        while frontier:
            if targets.intersection(frontier):
                return hops
            after = []
            for file in frontier:
                for nxt in self._imports(file):
                    if nxt not in seen:
                        seen.add(nxt)
                        after.append(nxt)
            frontier, hops = after, hops + 1
        return None

    def _imports(self, file: str) -> set[str]:
        if file in self.edges:
            return self.edges[file]
        found: set[str] = set()
        self.edges[file] = found
        try:
            source = (self.root / file).read_bytes()
        except OSError:
            return found
        key = f"{hashlib.sha1(source, usedforsecurity=False).hexdigest()}:{file}"
        names = self.known.get(key)
        if not isinstance(names, list):
            names = _imported(source, file)
            self.known[key] = names
            self.parsed += 1
        bases = ["", "src", os.path.dirname(file)]
        for name in names:
            found.update(self._resolve(str(name), bases))
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


def _imported(source: bytes, file: str) -> list[str]:
    """The dotted names the module's import statements (anywhere in it) may load."""
    try:
        tree = ast.parse(source, filename=file)
    except (SyntaxError, ValueError):
        return []
    package = _package(file)
    return sorted({n for node in ast.walk(tree) for n in _names(node, package)})


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

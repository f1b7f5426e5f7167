"""Go's affected tests (issue 29): of the packages the stage tests, those whose tests reach a
changed package, read from ``go list -test``'s import graph, passed to ``go test`` as import
paths. Nothing is built to find them and nothing is downloaded (``GOPROXY=off``)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from greenloop.detect.stages import Stage
from greenloop.verify.subset import go_split
from greenloop.verify.subset_argv import Subset, with_argv, words

MODULE_FILES = frozenset({"go.mod", "go.sum", "go.work", "go.work.sum"})
LIST_FORMAT = '{{.ImportPath}}\t{{.Dir}}\t{{join .Deps " "}}'


@dataclass(frozen=True, slots=True, kw_only=True)
class Choice:
    """The narrowed stage, or why there is none."""

    subset: Subset | None
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Graph:
    """``go list -test``: each package's folder, and each tested package's test dependencies."""

    dirs: Mapping[str, str]
    """Folder (absolute) -> import path, for the packages themselves."""
    tested: Mapping[str, frozenset[str]]
    """Import path of a package with tests -> every package its test binary imports."""


def related(
    stage: Stage, changed: Sequence[str], root: Path, environ: Mapping[str, str] = os.environ
) -> Choice:
    """The stage's ``go test`` on the packages whose tests import a changed one (or are it)."""
    argv = words(stage)
    split = go_split(argv[2:]) if argv and argv[:2] == ["go", "test"] and not stage.fix else None
    if split is None:
        return Choice(subset=None, reason="none: not a `go test` command we can narrow")
    kept, patterns = split
    if any(os.path.basename(f) in MODULE_FILES for f in changed):
        return Choice(
            subset=None, reason="none: the module's requirements changed, the gate decides"
        )
    where = root / stage.cwd
    graph = list_graph(where, patterns or ["."], environ)
    if isinstance(graph, str):
        return Choice(subset=None, reason=f"none: {graph}")
    hit = changed_packages(graph, [root / f for f in changed])
    if not hit:
        return Choice(subset=None, reason="none: no Go package changed, the gate decides")
    chosen = sorted(p for p, deps in graph.tested.items() if p in hit or deps & hit)
    reason = f"{_plural(len(chosen), 'package')} of {len(graph.tested)} whose tests reach " + (
        f"{_plural(len(hit), 'changed package')} (go list)"
    )
    if not chosen:
        return Choice(subset=None, reason=f"none: no package's tests reach the {len(hit)} changed")
    if len(chosen) == len(graph.tested):
        return Choice(  # not "none": every package is affected, so the full run is the step
            subset=None,
            reason=f"all: every package's tests reach the edit ({reason}); the gate runs them",
        )
    narrowed = with_argv(stage, ["go", "test", *kept, *chosen])
    return Choice(subset=Subset(stage=narrowed, ids=tuple(chosen)), reason=reason)


def list_graph(where: Path, patterns: Sequence[str], environ: Mapping[str, str]) -> Graph | str:
    """The import graph of ``patterns`` with their tests, or why it could not be read."""
    from greenloop.processes.process import run_command

    result = run_command(
        ("go", "list", "-e", "-test", "-f", LIST_FORMAT, *patterns),
        cwd=where,
        timeout_s=120,
        env={**environ, "GOPROXY": "off"},  # the import graph only: nothing downloaded
        shown=False,
    )
    if result.exit_code != 0 or result.timed_out:
        first = (result.stderr or result.stdout).strip().splitlines()
        return f"go list failed ({first[0][:120] if first else f'exit {result.exit_code}'})"
    return parse_graph(result.stdout)


def parse_graph(text: str) -> Graph:
    dirs: dict[str, str] = {}
    tested: dict[str, frozenset[str]] = {}
    for line in text.splitlines():
        path, _, rest = line.partition("\t")
        folder, _, deps = rest.partition("\t")
        if path.endswith(".test") and " " not in path:  # the test binary of a package
            tested[path.removesuffix(".test")] = frozenset(d.split(" ", 1)[0] for d in deps.split())
        elif " " not in path and folder:
            dirs[folder] = path
    return Graph(dirs=dirs, tested=tested)


def changed_packages(graph: Graph, files: Sequence[Path]) -> set[str]:
    """The packages the files belong to: a file's nearest folder that is a package (a file under
    ``testdata/`` belongs to the package that reads it)."""
    hit: set[str] = set()
    for file in files:
        for folder in file.parents:
            if str(folder) in graph.dirs:
                hit.add(graph.dirs[str(folder)])
                break
    return hit


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"

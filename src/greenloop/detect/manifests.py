"""A monorepo's workspace manifests, read from their files (issue 29): which folders are its
packages, and which of their dependencies are siblings. No package manager is run or needed.

pnpm-workspace.yaml, package.json ``workspaces`` (npm, yarn), Nx ``project.json``, Cargo.toml
``[workspace]``, go.work or several go.mod, uv's ``[tool.uv.workspace]`` or several pyproject.toml.
A manifest that cannot be read is a ``FatalError`` naming the file (exit 2), never a traceback.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

from greenloop.detect.manifests_cargo import cargo_workspace
from greenloop.detect.manifests_go import go_workspace
from greenloop.detect.manifests_python import py_workspace
from greenloop.detect.manifests_shared import Found, Member, as_dict, broken, expand, join_path
from greenloop.errors import FatalError

_NODE_DEPS = ("dependencies", "devDependencies", "peerDependencies", "optionalDependencies")
# folders that never hold a workspace's own packages
_SKIP = frozenset(
    {"node_modules", "target", "vendor", "testdata", "dist", "build", "venv", "site-packages"}
    | {"tests", "test", "fixtures", "examples", "example", "docs"}  # a fixture is no package
)
_SCAN_DEPTH = 2  # packages/x, not deeper: the Stop hook detects on every agent turn


def read_workspaces(root: Path) -> tuple[Found, ...]:
    """Every workspace manifest at ``root`` and the members each lists, JS first."""
    nested = _nested(root)
    readers = (
        _js_workspace(root),
        cargo_workspace(root),
        go_workspace(root, nested.get("go.mod", [])),
        py_workspace(root, nested.get("pyproject.toml", [])),
    )
    return tuple(f for f in readers if f is not None and f.members)


# ---- JavaScript: pnpm, npm/yarn workspaces, Nx projects ----


def _js_workspace(root: Path) -> Found | None:
    pnpm = root / "pnpm-workspace.yaml"
    if pnpm.is_file():
        globs, source = pnpm_packages(pnpm, root), "pnpm-workspace.yaml"
    else:
        manifest = _root_package_json(root)
        globs, source = _npm_workspaces(manifest, root), "package.json workspaces"
    members = [_node_member(d, root) for d in expand(root, globs, "package.json")]
    nx = _nx_projects(root, {m.path for m in members})
    if nx:
        source = f"{source} and Nx project.json" if members else "Nx project.json"
    if (root / "turbo.json").is_file() and members:
        _json(root / "turbo.json", root)  # read only to say so when it is broken
        source += " (Turborepo)"
    return Found(source=source, members=(*members, *nx)) if members or nx else None


def _root_package_json(root: Path) -> dict[str, object]:
    """The root's package.json; a broken one is this module's error only when it declares
    workspaces (else ``npm test`` reports it, as for any project)."""
    path = root / "package.json"
    if not path.is_file():
        return {}
    try:
        return _json(path, root)
    except FatalError:
        if '"workspaces"' in path.read_text(encoding="utf-8", errors="replace"):
            raise
        return {}


def pnpm_packages(path: Path, root: Path) -> tuple[str, ...]:
    """The ``packages:`` globs of pnpm-workspace.yaml: a block list (``- 'packages/*'``) or a flow
    list (``packages: [a, b]``). A tiny reader for this one key; other keys are skipped."""
    text = path.read_text(encoding="utf-8", errors="replace")
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^packages\s*:\s*(.*?)\s*(?:#.*)?$", line)
        if not m:
            continue
        if m.group(1).startswith("["):
            if not m.group(1).endswith("]"):
                raise broken(path, root, f"line {i + 1}: the packages list is not closed")
            return tuple(
                _scalar(s, path, root, i) for s in m.group(1)[1:-1].split(",") if s.strip()
            )
        if m.group(1):
            raise broken(path, root, f"line {i + 1}: packages must be a list of globs")
        return tuple(_block_list(lines, i + 1, path, root))
    if "\t" in text:
        raise broken(path, root, "YAML forbids tabs for indentation")
    return ()


def _block_list(lines: list[str], start: int, path: Path, root: Path) -> Iterator[str]:
    for n, line in enumerate(lines[start:], start + 1):
        body = line.split(" #")[0].rstrip()
        if not body.strip() or body.lstrip().startswith("#"):
            continue
        if not line[:1].isspace() and not body.startswith("-"):
            return  # the next top-level key
        if "\t" in line[: len(line) - len(line.lstrip())]:
            raise broken(path, root, f"line {n}: YAML forbids tabs for indentation")
        item = body.strip()
        if not item.startswith("- "):
            raise broken(path, root, f"line {n}: expected a list item (- 'glob'), got {item!r}")
        yield _scalar(item[2:], path, root, n - 1)


def _scalar(raw: str, path: Path, root: Path, index: int) -> str:
    s = raw.strip()
    if s[:1] in "'\"":
        if len(s) < 2 or s[-1] != s[0]:
            raise broken(path, root, f"line {index + 1}: unterminated quote in {s}")
        return s[1:-1]
    if not s or s[0] in "{[&*|>":
        raise broken(path, root, f"line {index + 1}: expected a glob, got {s!r}")
    return s


def _npm_workspaces(manifest: dict[str, object], root: Path) -> tuple[str, ...]:
    spaces = manifest.get("workspaces")
    if isinstance(spaces, dict):  # yarn 1: {"packages": [...], "nohoist": [...]}
        spaces = spaces.get("packages")
    if spaces is None:
        return ()
    if not isinstance(spaces, list) or not all(isinstance(g, str) for g in spaces):
        raise broken(root / "package.json", root, "workspaces must be a list of globs")
    return tuple(spaces)


def _node_member(folder: Path, root: Path) -> Member:
    manifest = _json(folder / "package.json", root)
    rel = folder.relative_to(root).as_posix()
    name = manifest.get("name")
    deps: list[str] = []
    for key in _NODE_DEPS:
        table = manifest.get(key)
        if isinstance(table, dict):
            deps += [n for n, spec in table.items() if isinstance(spec, str)]
            deps += [
                "dir:" + join_path(rel, spec.split(":", 1)[1])
                for spec in table.values()
                if isinstance(spec, str) and spec.startswith(("file:", "link:"))
            ]
    return Member(
        name=name if isinstance(name, str) and name else rel,
        path=rel,
        kind="node",
        manifest=f"{rel}/package.json",
        deps=tuple(dict.fromkeys(deps)),
    )


def _nx_projects(root: Path, known: set[str]) -> list[Member]:
    """Nx projects (``project.json``) that are not already workspace packages: their name and
    ``implicitDependencies``; their stages come from their folder like any package's."""
    if not (root / "nx.json").is_file():
        return []
    _json(root / "nx.json", root)
    members = []
    for folder in _nested(root, ("project.json",)).get("project.json", []):
        rel = folder.relative_to(root).as_posix()
        data = _json(folder / "project.json", root)
        implicit = data.get("implicitDependencies", [])
        deps = (
            tuple(d for d in implicit if isinstance(d, str)) if isinstance(implicit, list) else ()
        )
        if rel in known:
            continue
        name = data.get("name")
        members.append(
            Member(
                name=name if isinstance(name, str) else rel,
                path=rel,
                kind="node",
                manifest=f"{rel}/project.json",
                deps=deps,
                targets=_nx_targets(data),
            )
        )
    return members


# Nx target names -> greenloop's stage names
_NX_STAGES = {"lint": "lint", "typecheck": "type", "type-check": "type", "test": "test"}


def _nx_targets(project: dict[str, object]) -> tuple[tuple[str, str, str], ...]:
    """The project's lint, typecheck and test targets that are plain commands (``nx:run-commands``,
    run from the workspace root unless ``options.cwd``); another executor needs Nx itself."""
    found = []
    for target, spec in as_dict(project.get("targets")).items():
        options = as_dict(as_dict(spec).get("options"))
        command = options.get("command")
        plain = as_dict(spec).get("executor") == "nx:run-commands" and isinstance(command, str)
        if target in _NX_STAGES and plain:
            cwd = options.get("cwd")
            found.append((_NX_STAGES[target], str(command), cwd if isinstance(cwd, str) else ""))
    order = ("format", "lint", "type", "test", "build")
    return tuple(sorted(found, key=lambda t: order.index(t[0])))


# ---- shared ----


def _nested(
    root: Path, manifests: tuple[str, ...] = ("go.mod", "pyproject.toml")
) -> dict[str, list[Path]]:
    """Folders below ``root`` (not itself, at most two deep) holding each manifest, sorted."""
    found: dict[str, list[Path]] = {}
    level = [root]
    for _ in range(_SCAN_DEPTH):
        below = []
        for folder in level:
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                if entry.name.startswith((".", "_")) or entry.name in _SKIP:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    below.append(Path(entry.path))
        for folder in below:
            for manifest in manifests:
                if (folder / manifest).is_file():
                    found.setdefault(manifest, []).append(folder)
        level = below
    return {k: sorted(v) for k, v in found.items()}


def _json(path: Path, root: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise broken(path, root, str(exc)) from None
    if not isinstance(data, dict):
        raise broken(path, root, "expected a JSON object")
    return data

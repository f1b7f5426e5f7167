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
from dataclasses import dataclass
from pathlib import Path

from greenloop.errors import FatalError

_NODE_DEPS = ("dependencies", "devDependencies", "peerDependencies", "optionalDependencies")
# folders that never hold a workspace's own packages
_SKIP = frozenset(
    {"node_modules", "target", "vendor", "testdata", "dist", "build", "venv", "site-packages"}
    | {"tests", "test", "fixtures", "examples", "example", "docs"}  # a fixture is no package
)
_SCAN_DEPTH = 2  # packages/x, not deeper: the Stop hook detects on every agent turn


@dataclass(frozen=True, slots=True, kw_only=True)
class Member:
    """One package as its manifest declares it, before its stages are detected."""

    name: str
    path: str
    """Its folder, relative to the repository root, POSIX; ``""`` for the root itself."""
    kind: str
    """``node``, ``cargo``, ``go`` or ``python``."""
    manifest: str
    """Its own manifest (``packages/ui/package.json``)."""
    deps: tuple[str, ...] = ()
    """What it depends on, as its manifest names them: sibling names or folders (``dir:<path>``)."""
    targets: tuple[tuple[str, str, str], ...] = ()
    """Nx ``nx:run-commands`` targets: (stage name, shell command, folder it runs in)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Found:
    """The members one workspace manifest lists."""

    source: str
    """The workspace file (``pnpm-workspace.yaml``, ``Cargo.toml [workspace]``)."""
    members: tuple[Member, ...]


def read_workspaces(root: Path) -> tuple[Found, ...]:
    """Every workspace manifest at ``root`` and the members each lists, JS first."""
    nested = _nested(root)
    readers = (
        _js_workspace(root),
        _cargo_workspace(root),
        _go_workspace(root, nested.get("go.mod", [])),
        _py_workspace(root, nested.get("pyproject.toml", [])),
    )
    return tuple(f for f in readers if f is not None and f.members)


def broken(path: Path, root: Path, why: str) -> FatalError:
    rel = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
    return FatalError(f"cannot read the workspace manifest {rel}: {why}")


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
                "dir:" + _join(rel, spec.split(":", 1)[1])
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
    for target, spec in _dict(project.get("targets")).items():
        options = _dict(_dict(spec).get("options"))
        command = options.get("command")
        plain = _dict(spec).get("executor") == "nx:run-commands" and isinstance(command, str)
        if target in _NX_STAGES and plain:
            cwd = options.get("cwd")
            found.append((_NX_STAGES[target], str(command), cwd if isinstance(cwd, str) else ""))
    order = ("format", "lint", "type", "test", "build")
    return tuple(sorted(found, key=lambda t: order.index(t[0])))


# ---- Rust: Cargo.toml [workspace] ----


def _cargo_workspace(root: Path) -> Found | None:
    path = root / "Cargo.toml"
    if not path.is_file():
        return None
    data = _toml(path, root)
    space = data.get("workspace")
    if not isinstance(space, dict):
        return None
    members_globs = _strings(space, "members", path, root)
    excluded = {(root / e).resolve() for e in _strings(space, "exclude", path, root)}
    shared = space.get("dependencies", {})
    folders = [d for d in expand(root, members_globs, "Cargo.toml") if d.resolve() not in excluded]
    if isinstance(data.get("package"), dict) and root not in folders:
        folders.insert(0, root)
    members = tuple(_crate(d, root, shared if isinstance(shared, dict) else {}) for d in folders)
    return Found(source="Cargo.toml [workspace]", members=members)


def _crate(folder: Path, root: Path, shared: dict[str, object]) -> Member:
    manifest = folder / "Cargo.toml"
    data = _toml(manifest, root)
    package = data.get("package")
    rel = folder.relative_to(root).as_posix() if folder != root else ""
    name = package.get("name") if isinstance(package, dict) else None
    tables = [data.get(k) for k in ("dependencies", "dev-dependencies", "build-dependencies")]
    for target in _dict(data.get("target")).values():
        tables += [_dict(target).get(k) for k in ("dependencies", "dev-dependencies")]
    deps: list[str] = []
    for table in tables:
        for key, raw in _dict(table).items():
            spec = _dict(raw)
            if spec.get("workspace") is True:  # `dep.workspace = true`: the root's entry says where
                spec = _dict(shared.get(key)) | {"from_root": True}
            if isinstance(spec.get("path"), str):
                base = "" if spec.get("from_root") else rel
                deps.append("dir:" + _join(base, str(spec["path"])))
            else:
                deps.append(str(spec.get("package", key)))
    return Member(
        name=name if isinstance(name, str) else rel or root.name,
        path=rel,
        kind="cargo",
        manifest=f"{rel}/Cargo.toml" if rel else "Cargo.toml",
        deps=tuple(dict.fromkeys(deps)),
    )


# ---- Go: go.work, or several go.mod ----


def _go_workspace(root: Path, nested: list[Path]) -> Found | None:
    work = root / "go.work"
    if work.is_file():
        folders = [root / u for u in go_work_uses(work, root)]
        source = "go.work"
    else:
        folders = list(nested)
        if (root / "go.mod").is_file():
            folders.insert(0, root)
        source = "several go.mod"
        if len(folders) < 2:
            return None
    members = []
    for folder in folders:
        if not (folder / "go.mod").is_file():
            raise broken(work, root, f"use {folder.relative_to(root).as_posix()}: it has no go.mod")
        members.append(_go_module(folder, root))
    return Found(source=source, members=tuple(members))


def go_work_uses(path: Path, root: Path) -> tuple[str, ...]:
    """The folders of go.work's ``use`` directives (one line, or a parenthesised block)."""
    text = re.sub(r"//.*", "", path.read_text(encoding="utf-8", errors="replace"))
    uses: list[str] = []
    block = False
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if block:
            if line == ")":
                block = False
            elif line:
                uses.append(line.strip('"'))
            continue
        if line == "use (":
            block = True
        elif line.startswith("use "):
            uses.append(line[4:].strip().strip('"'))
        elif line.startswith("use"):
            raise broken(path, root, f"line {n}: expected `use ./dir` or `use (`, got {line!r}")
    if block:
        raise broken(path, root, "the use ( block is not closed")
    return tuple(uses)


# `require path v1.2.3` or, inside a require ( ... ) block, `path v1.2.3`
_GO_REQUIRE = re.compile(r"^\s*(?:require\s+)?([^\s()]+)\s+v\d\S*\s*$", re.MULTILINE)
_GO_VERBS = frozenset({"module", "go", "toolchain", "replace", "exclude", "retract", "require"})


def _go_module(folder: Path, root: Path) -> Member:
    path = folder / "go.mod"
    text = re.sub(r"//.*", "", path.read_text(encoding="utf-8", errors="replace"))
    module = re.search(r"^module\s+(\S+)", text, re.MULTILINE)
    rel = folder.relative_to(root).as_posix() if folder != root else ""
    if module is None:
        raise broken(path, root, "no module directive")
    requires = [m.group(1) for m in _GO_REQUIRE.finditer(text) if m.group(1) not in _GO_VERBS]
    replaced = re.findall(r"=>\s*(\.\.?/\S*)", text)
    deps = [*requires, *("dir:" + _join(rel, r) for r in replaced)]
    return Member(
        name=module.group(1).strip('"'),
        path=rel,
        kind="go",
        manifest=f"{rel}/go.mod" if rel else "go.mod",
        deps=tuple(dict.fromkeys(deps)),
    )


# ---- Python: uv workspace, or several pyproject.toml ----


def _py_workspace(root: Path, nested: list[Path]) -> Found | None:
    path = root / "pyproject.toml"
    data = _toml(path, root) if path.is_file() else {}
    uv = _dict(_dict(_dict(data.get("tool")).get("uv")).get("workspace"))
    if uv:
        excluded = {(root / e).resolve() for e in _strings(uv, "exclude", path, root)}
        folders = [
            d
            for d in expand(root, _strings(uv, "members", path, root), "pyproject.toml")
            if d.resolve() not in excluded
        ]
        source = "pyproject.toml [tool.uv.workspace]"
    else:
        folders = list(nested)
        source = "several pyproject.toml"
        # a root project with nested ones holds fixtures more often than packages: uv says so
        if len(folders) < 2 or isinstance(data.get("project"), dict):
            return None
    if isinstance(data.get("project"), dict) and root not in folders:
        folders.insert(0, root)
    return Found(source=source, members=tuple(_py_project(d, root) for d in folders))


def _py_project(folder: Path, root: Path) -> Member:
    data = _toml(folder / "pyproject.toml", root)
    project = _dict(data.get("project"))
    poetry = _dict(_dict(data.get("tool")).get("poetry"))
    rel = folder.relative_to(root).as_posix() if folder != root else ""
    name = project.get("name") or poetry.get("name") or rel or root.name
    # requirements: [project]'s, its extras', dependency groups', and those a Hatch metadata hook
    # fills in for `dynamic = ["dependencies"]` (pydantic-ai's uv-dynamic-versioning)
    hooks = _dict(_dict(_dict(_dict(data.get("tool")).get("hatch")).get("metadata")).get("hooks"))
    lists = [project.get("dependencies"), *_dict(project.get("optional-dependencies")).values()]
    lists += list(_dict(data.get("dependency-groups")).values())
    for hook in hooks.values():
        lists += [_dict(hook).get("dependencies")]
        lists += list(_dict(_dict(hook).get("optional-dependencies")).values())
    deps = [re.split(r"[\s\[<>=!~;@(]", d, maxsplit=1)[0] for group in lists for d in _list(group)]
    for key, raw in _dict(poetry.get("dependencies")).items():
        spec = _dict(raw)
        deps.append("dir:" + _join(rel, str(spec["path"])) if "path" in spec else key)
    return Member(
        name=normal_name(str(name)),
        path=rel,
        kind="python",
        manifest=f"{rel}/pyproject.toml" if rel else "pyproject.toml",
        deps=tuple(
            dict.fromkeys(normal_name(d) if not d.startswith("dir:") else d for d in deps if d)
        ),
    )


def normal_name(name: str) -> str:
    """PEP 503: ``My_Pkg`` and ``my-pkg`` are one package."""
    return re.sub(r"[-_.]+", "-", name).lower()


# ---- shared ----


def expand(root: Path, globs: tuple[str, ...] | list[str], manifest: str) -> list[Path]:
    """The folders the workspace globs name that hold ``manifest``; ``!glob`` excludes."""
    chosen: dict[Path, None] = {}
    for glob in globs:
        negate = glob.startswith("!")
        pattern = glob.removeprefix("!").removeprefix("./").rstrip("/")
        if not pattern or pattern == ".":
            hits = [root]
        else:
            hits = [p for p in sorted(root.glob(pattern)) if "node_modules" not in p.parts]
        for hit in hits:
            if negate:
                chosen.pop(hit, None)
            elif (hit / manifest).is_file() and hit != root:
                chosen[hit] = None
    return list(chosen)


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


def _join(base: str, rel: str) -> str:
    joined = os.path.normpath(os.path.join(base, rel)).replace(os.sep, "/").removeprefix("./")
    return "" if joined == "." else joined


def _json(path: Path, root: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise broken(path, root, str(exc)) from None
    if not isinstance(data, dict):
        raise broken(path, root, "expected a JSON object")
    return data


def _toml(path: Path, root: Path) -> dict[str, object]:
    import tomllib

    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise broken(path, root, str(exc)) from None


def _strings(table: dict[str, object], key: str, path: Path, root: Path) -> list[str]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise broken(path, root, f"{key} must be a list of strings")
    return list(value)


def _dict(value: object) -> dict[str, object]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []

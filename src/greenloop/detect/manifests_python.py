"""A Python workspace's projects, from uv's ``[tool.uv.workspace]`` or several pyproject.toml
(manifests.py reads every kind)."""

from __future__ import annotations

import re
from pathlib import Path

from greenloop.detect.manifests_shared import (
    Found,
    Member,
    as_dict,
    expand,
    join_path,
    read_toml,
    string_list,
)


def py_workspace(root: Path, nested: list[Path]) -> Found | None:
    path = root / "pyproject.toml"
    data = read_toml(path, root) if path.is_file() else {}
    uv = as_dict(as_dict(as_dict(data.get("tool")).get("uv")).get("workspace"))
    if uv:
        excluded = {(root / e).resolve() for e in string_list(uv, "exclude", path, root)}
        folders = [
            d
            for d in expand(root, string_list(uv, "members", path, root), "pyproject.toml")
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
    data = read_toml(folder / "pyproject.toml", root)
    project = as_dict(data.get("project"))
    poetry = as_dict(as_dict(data.get("tool")).get("poetry"))
    rel = folder.relative_to(root).as_posix() if folder != root else ""
    name = project.get("name") or poetry.get("name") or rel or root.name
    # requirements: [project]'s, its extras', dependency groups', and those a Hatch metadata hook
    # fills in for `dynamic = ["dependencies"]` (pydantic-ai's uv-dynamic-versioning)
    hooks = as_dict(
        as_dict(as_dict(as_dict(data.get("tool")).get("hatch")).get("metadata")).get("hooks")
    )
    lists = [project.get("dependencies"), *as_dict(project.get("optional-dependencies")).values()]
    lists += list(as_dict(data.get("dependency-groups")).values())
    for hook in hooks.values():
        lists += [as_dict(hook).get("dependencies")]
        lists += list(as_dict(as_dict(hook).get("optional-dependencies")).values())
    deps = [re.split(r"[\s\[<>=!~;@(]", d, maxsplit=1)[0] for group in lists for d in _list(group)]
    for key, raw in as_dict(poetry.get("dependencies")).items():
        spec = as_dict(raw)
        deps.append("dir:" + join_path(rel, str(spec["path"])) if "path" in spec else key)
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


def _list(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []

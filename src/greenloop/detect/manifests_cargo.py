"""A Rust workspace's crates, from Cargo.toml ``[workspace]`` (manifests.py reads every kind)."""

from __future__ import annotations

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


def cargo_workspace(root: Path) -> Found | None:
    path = root / "Cargo.toml"
    if not path.is_file():
        return None
    data = read_toml(path, root)
    space = data.get("workspace")
    if not isinstance(space, dict):
        return None
    members_globs = string_list(space, "members", path, root)
    excluded = {(root / e).resolve() for e in string_list(space, "exclude", path, root)}
    shared = space.get("dependencies", {})
    folders = [d for d in expand(root, members_globs, "Cargo.toml") if d.resolve() not in excluded]
    if isinstance(data.get("package"), dict) and root not in folders:
        folders.insert(0, root)
    members = tuple(_crate(d, root, shared if isinstance(shared, dict) else {}) for d in folders)
    return Found(source="Cargo.toml [workspace]", members=members)


def _crate(folder: Path, root: Path, shared: dict[str, object]) -> Member:
    manifest = folder / "Cargo.toml"
    data = read_toml(manifest, root)
    package = data.get("package")
    rel = folder.relative_to(root).as_posix() if folder != root else ""
    name = package.get("name") if isinstance(package, dict) else None
    tables = [data.get(k) for k in ("dependencies", "dev-dependencies", "build-dependencies")]
    for target in as_dict(data.get("target")).values():
        tables += [as_dict(target).get(k) for k in ("dependencies", "dev-dependencies")]
    deps: list[str] = []
    for table in tables:
        for key, raw in as_dict(table).items():
            spec = as_dict(raw)
            if spec.get("workspace") is True:  # `dep.workspace = true`: the root's entry says where
                spec = as_dict(shared.get(key)) | {"from_root": True}
            if isinstance(spec.get("path"), str):
                base = "" if spec.get("from_root") else rel
                deps.append("dir:" + join_path(base, str(spec["path"])))
            else:
                deps.append(str(spec.get("package", key)))
    return Member(
        name=name if isinstance(name, str) else rel or root.name,
        path=rel,
        kind="cargo",
        manifest=f"{rel}/Cargo.toml" if rel else "Cargo.toml",
        deps=tuple(dict.fromkeys(deps)),
    )

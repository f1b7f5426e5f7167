"""What every workspace reader shares (manifests.py): the ``Member`` and ``Found`` it returns, the
error naming a broken manifest, the folders a workspace's globs name, and typed look-ups in a
TOML or JSON table."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from greenloop.errors import FatalError


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


def broken(path: Path, root: Path, why: str) -> FatalError:
    rel = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
    return FatalError(f"cannot read the workspace manifest {rel}: {why}")


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


def join_path(base: str, rel: str) -> str:
    joined = os.path.normpath(os.path.join(base, rel)).replace(os.sep, "/").removeprefix("./")
    return "" if joined == "." else joined


def read_toml(path: Path, root: Path) -> dict[str, object]:
    import tomllib

    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise broken(path, root, str(exc)) from None


def string_list(table: dict[str, object], key: str, path: Path, root: Path) -> list[str]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise broken(path, root, f"{key} must be a list of strings")
    return list(value)


def as_dict(value: object) -> dict[str, object]:
    return value if isinstance(value, dict) else {}

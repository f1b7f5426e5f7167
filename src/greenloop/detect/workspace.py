"""A monorepo's packages (issue 29): each with the stages detected in its folder, and who depends
on whom. Imported where a workspace is found or read, never on a one-project path."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from greenloop.detect.stage import Stage


@dataclass(frozen=True, slots=True, kw_only=True)
class Package:
    """One package of a workspace and the verifier stages detected in its folder."""

    name: str
    path: str
    """Its folder relative to the repository root (POSIX); ``""``: the root is itself a package."""
    kind: str
    manifest: str
    stages: tuple[Stage, ...]
    deps: tuple[str, ...]
    """Names of the sibling packages it depends on."""

    @property
    def where(self) -> str:
        return self.path or "."


@dataclass(frozen=True, slots=True, kw_only=True)
class Workspace:
    """A monorepo: its packages and the files that declared them."""

    source: str
    """``pnpm-workspace.yaml``; several sources joined with `` + ``."""
    packages: tuple[Package, ...]
    root_stages: tuple[Stage, ...] = ()
    """The root's own lint and type stages (ruff, mypy, eslint at the root): they run always."""

    @property
    def unverified(self) -> tuple[Package, ...]:
        return tuple(p for p in self.packages if not p.stages)

    def dependents(self, names: Iterable[str]) -> dict[str, str]:
        """``names`` and every package that depends on one of them, transitively, each with why
        (``""`` for a changed one, ``"depends on ui"`` for a dependent)."""
        why = {n: "" for n in names}
        queue = list(why)
        while queue:
            name = queue.pop(0)
            for p in self.packages:
                if name in p.deps and p.name not in why:
                    why[p.name] = f"depends on {name}"
                    queue.append(p.name)
        return why

    def owner(self, path: str) -> Package | None:
        """The package whose folder holds ``path`` (the deepest); None: a root-level file."""
        holders = [
            p for p in self.packages if p.path and (path == p.path or path.startswith(p.path + "/"))
        ]
        if holders:
            return max(holders, key=lambda p: len(p.path))
        # a root package's own sources (src/lib.rs), never a root config or lockfile
        return next((p for p in self.packages if p.path == ""), None) if "/" in path else None

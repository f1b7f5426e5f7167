"""A monorepo's packages (issue 29): each one's stages, run in its own folder, and the workspace
graph that says which packages an edit affects (the changed ones and their dependents).

``check``, the Stop hook and the loop's gate run every package; an iteration of the loop runs the
packages its edit affects first (``affected_cascade``), and only when they are green the gate.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from greenloop.detect.manifests import read_workspaces
from greenloop.detect.manifests_shared import Member
from greenloop.detect.stages import Cascade, Stage, command_from_docs, detect_stages
from greenloop.detect.workspace import Package, Workspace


def find_workspace(root: Path) -> Workspace | None:
    """The packages of the monorepo at ``root``, or None when it is not one."""
    found = read_workspaces(root)
    members = {m.path: m for f in found for m in f.members}  # one package per folder
    if len(members) < 2:
        return None
    names = {m.name for m in members.values()}
    by_dir = {m.path: m.name for m in members.values()}
    packages = _ordered([_package(root, m, names, by_dir) for m in members.values()])
    root_stages = tuple(s for s in detect_stages(root) if s.name != "test" and "" not in members)
    return Workspace(
        source=" + ".join(f.source for f in found), packages=packages, root_stages=root_stages
    )


def _package(root: Path, member: Member, names: set[str], by_dir: Mapping[str, str]) -> Package:
    deps = [
        by_dir.get(d[4:]) if d.startswith("dir:") else (d if d in names else None)
        for d in member.deps
    ]
    label = member.path or "."
    # a package's own AGENTS.md / CLAUDE.md test command wins over detection, as at the root
    documented = command_from_docs(root / member.path) if member.path else None
    stages = tuple(
        replace(s, cwd=member.path, package=member.name, why=f"{label}: {s.why}")
        for s in ((documented,) if documented else detect_stages(root / member.path))
    )
    if member.targets:  # Nx's own commands, read from project.json
        stages = tuple(
            Stage(
                name=n,
                command=c,
                cwd=cwd,
                package=member.name,
                why=f"{member.manifest}: nx:run-commands",
            )
            for n, c, cwd in member.targets
        )
    return Package(
        name=member.name,
        path=member.path,
        kind=member.kind,
        manifest=member.manifest,
        stages=stages,
        deps=tuple(d for d in dict.fromkeys(deps) if d and d != member.name),
    )


def _ordered(packages: list[Package]) -> tuple[Package, ...]:
    """Dependencies before their dependents (a cycle keeps the manifests' order)."""
    pending = list(packages)
    done: list[Package] = []
    seen: set[str] = set()
    while pending:
        ready = [p for p in pending if all(d in seen for d in p.deps)]
        for p in ready or pending[:1]:
            done.append(p)
            seen.add(p.name)
            pending.remove(p)
    return tuple(done)


def workspace_cascade(workspace: Workspace) -> Cascade | None:
    """Every package's stages, dependencies first; None when no package has a verifier."""
    stages = tuple(s for p in workspace.packages for s in p.stages)
    if not stages:
        return None
    return Cascade(
        stages=workspace.root_stages + stages,
        source=f"detected in {len(workspace.packages)} packages ({workspace.source})",
        workspace=workspace,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Scope:
    """The packages an iteration's edit affects, and their stages to run first."""

    cascade: Cascade
    """Their stages; the whole cascade when the edit affects every package."""
    packages: tuple[tuple[str, str], ...]
    """(name, why): why is ``""`` for a changed package, ``"depends on ui"`` for a dependent."""
    changed: tuple[str, ...]
    """The changed packages' folders, or the root-level file that affects every package."""
    every: bool = False

    def describe(self) -> str:
        """``packages/ui changed → ui, app (depends on ui)``."""
        if self.every and not self.packages:
            what = "a root-level file" if "/" not in self.changed[0] else "a file no package holds"
            return f"{what} changed ({self.changed[0]}) → every package"
        ran = ", ".join(f"{n} ({why})" if why else n for n, why in self.packages)
        return f"{', '.join(self.changed)} changed → {ran}" + (
            " (every package)" if self.every else ""
        )


def affected_cascade(
    cascade: Cascade, files: Iterable[str], *, root: Path, environ: Mapping[str, str] = os.environ
) -> Scope | None:
    """The stages of the packages ``files`` affect (``every`` when that is all of them: a
    root-level file, a lockfile, a shared config); None when the cascade is not a workspace's or
    no file changed."""
    workspace = cascade.workspace
    if workspace is None:
        return None
    from greenloop.git import tracked_symlinks

    owners: dict[str, Package] = {}
    links: dict[str, str] | None = None
    for path in files:
        owner = workspace.owner(path)
        if owner is None:
            return Scope(cascade=cascade, packages=(), changed=(path,), every=True)
        owners[owner.name] = owner
        links = tracked_symlinks(root) if links is None else links
        for seen in through_links(path, links):  # the file as another package sees it
            if (also := workspace.owner(seen)) is not None:
                owners[also.name] = also
    if not owners:
        return None
    why = workspace.dependents(owners)
    why |= {
        n: w for n, w in go_dependents(workspace, owners, root, environ).items() if n not in why
    }
    # a package with no verifier has nothing to run: `detect` and the plan name it
    chosen = [p for p in workspace.packages if p.name in why and p.stages]
    stages = workspace.root_stages + tuple(s for p in chosen for s in p.stages)
    every = len(chosen) == sum(1 for p in workspace.packages if p.stages) or not stages
    part = Cascade(stages=stages, source=f"{len(chosen)} affected package(s)", workspace=workspace)
    return Scope(
        cascade=cascade if every else part,
        packages=tuple((p.name, why[p.name]) for p in chosen),
        changed=tuple(p.where for p in owners.values()),
        every=every,
    )


def through_links(path: str, links: Mapping[str, str]) -> list[str]:
    """``path`` as each tracked symlink into it shows it: serde_derive_internals/src links to
    ../serde_derive/src/internals, so an edit to serde_derive/src/internals/ast.rs is
    serde_derive_internals/src/ast.rs too, and that crate compiles it."""
    return [
        link + path[len(target) :]
        for link, target in links.items()
        if path == target or path.startswith(target + "/")
    ]


def go_dependents(
    workspace: Workspace,
    changed: Mapping[str, Package],
    root: Path,
    environ: Mapping[str, str] = os.environ,
) -> dict[str, str]:
    """Go modules whose package graph (``go list -deps``) reaches a changed module: an import
    go.mod's requires do not show (a go.work workspace needs none)."""
    go_changed = {n for n, p in changed.items() if p.kind == "go"}
    if not go_changed:
        return {}
    from greenloop.processes.process import run_command

    why: dict[str, str] = {}
    for p in workspace.packages:
        if p.kind != "go" or p.name in changed:
            continue
        result = run_command(
            ("go", "list", "-deps", "-f", "{{if .Module}}{{.Module.Path}}{{end}}", "./..."),
            cwd=root / p.path,
            timeout_s=120,
            env={**environ, "GOPROXY": "off"},  # no module download: the workspace only
        )
        used = set(result.stdout.split()) if result.exit_code == 0 else set()
        hit = sorted(used & go_changed)
        if hit:
            why[p.name] = f"imports {hit[0]} (go list -deps)"
    return why


def workspace_text(workspace: Workspace) -> str:
    """``greenloop detect``'s package list: each package, its stages, and those with none."""
    lines = [f"Packages ({workspace.source}), dependencies first:"]
    for p in workspace.packages:
        deps = f" (depends on {', '.join(p.deps)})" if p.deps else ""
        ran = ", ".join(s.name for s in p.stages) or "no verifier"
        lines.append(f"  {p.name:<20} {p.where:<24} {ran}{deps}")
    for p in workspace.unverified:
        lines.append(f"  no verifier: {p.name} ({p.manifest}): {NO_VERIFIER[p.kind]}")
    if workspace.unverified == workspace.packages:
        lines.append("  no package has a verifier of its own: the root's stages run for every edit")
    else:
        lines.append(
            "  greenloop run runs the packages an edit affects (and their dependents) each "
            "iteration, and every package before it calls a run green"
        )
    return "\n".join(lines)


def workspace_json(workspace: Workspace) -> dict[str, object]:
    return {
        "source": workspace.source,
        "packages": [
            {
                "name": p.name,
                "path": p.where,
                "kind": p.kind,
                "manifest": p.manifest,
                "depends_on": list(p.deps),
                "stages": [s.name for s in p.stages],
                "no_verifier": "" if p.stages else NO_VERIFIER[p.kind],
            }
            for p in workspace.packages
        ],
    }


# what a package with no detected stage lacks, by kind
NO_VERIFIER = {
    "node": "no scripts.test in its package.json (or npm's placeholder)",
    "cargo": "no Cargo.toml in its folder",
    "go": "no go.mod in its folder",
    "python": "no test files or pytest configuration found in its folder",
}


def plan_line(workspace: Workspace) -> str:
    """The pre-flight plan's line for a monorepo."""
    names = [p.name for p in workspace.unverified]
    shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    none = f" ({len(names)} with no verifier: {shown})" if names else ""
    return (
        f"  packages ({workspace.source}): {len(workspace.packages)}{none}; each iteration runs the "
        "packages its edit affects, the gate every package\n"
    )

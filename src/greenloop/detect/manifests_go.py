"""A Go workspace's modules, from go.work or several go.mod (manifests.py reads every kind)."""

from __future__ import annotations

import re
from pathlib import Path

from greenloop.detect.manifests_shared import Found, Member, broken, join_path


def go_workspace(root: Path, nested: list[Path]) -> Found | None:
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
    deps = [*requires, *("dir:" + join_path(rel, r) for r in replaced)]
    return Member(
        name=module.group(1).strip('"'),
        path=rel,
        kind="go",
        manifest=f"{rel}/go.mod" if rel else "go.mod",
        deps=tuple(dict.fromkeys(deps)),
    )

"""A JS import that cannot resolve because of the checkout, not the code: the project's own
package imported by name (``ohash/crypto``) before its build wrote what package.json's exports
point at, or a declared dependency that is not in node_modules."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass

# node ("Cannot find package 'x' imported from"), jest and CJS ("Cannot find module 'x'"),
# esbuild ('Could not resolve "x"'), vite ('Failed to resolve import "x" from')
_UNRESOLVED = re.compile(
    r"Cannot find (?:package|module) '(?P<a>[^'\s]+)'"
    r"|Could not resolve \"(?P<b>[^\"\s]+)\"|Failed to resolve import \"(?P<c>[^\"\s]+)\""
)
_DEPENDENCIES = ("dependencies", "devDependencies", "peerDependencies", "optionalDependencies")


# eslint-plugin-import's and eslint-plugin-n's rules for an import that does not resolve
UNRESOLVED_RULES = frozenset(
    {"import/no-unresolved", "n/no-missing-import", "n/no-missing-require"}
    | {"node/no-missing-import", "node/no-missing-require"}
)
_LINT_SPEC = re.compile(r"module '(?P<a>[^']+)'|\"(?P<b>[^\"]+)\" is not found")


@dataclass(frozen=True, slots=True, kw_only=True)
class Unresolved:
    """Why an import did not resolve, when the checkout is to blame, and what to run."""

    evidence: str
    reason: str
    advice: str


def unresolved_by_checkout(text: str, root: str) -> Unresolved | None:
    """The first unresolved bare import, when every one of them is the checkout's doing."""
    manifest = _manifest(root)
    found = [m for m in _UNRESOLVED.finditer(text) if not _relative(_spec(m))]
    if manifest is None or not found:
        return None
    said = [_why(_package(_spec(m)), manifest, root) for m in found]
    if not all(said):
        return None  # an import nobody declared (a typo, a package never added): the code's
    first = said[0]
    assert first is not None
    return Unresolved(evidence=found[0].group(0), reason=first[0], advice=first[1])


def unbuilt_in_lint(unresolved: list[tuple[str, int, str]], root: str) -> Unresolved | None:
    """A linter's unresolved imports (file, line, message), when each is a relative import of the
    project's build output (where package.json's main, exports or files point) before the build
    wrote it: jest-extended's ``all.js`` requires ``./dist/all``, and ``eslint .`` fails on a
    fresh clone until ``npm run build`` has run."""
    manifest = _manifest(root)
    if manifest is None or not unresolved:
        return None
    outputs = _output_dirs(manifest)
    for file, _, message in unresolved:
        m = _LINT_SPEC.search(message)
        spec = (m["a"] or m["b"]) if m else ""
        target = os.path.normpath(os.path.join(os.path.dirname(file), spec))
        top = target.split(os.sep)[0]
        if (
            not spec.startswith(".")
            or top not in outputs
            or os.path.exists(os.path.join(root, top))
        ):
            return None  # a typo, a file never written, or the build output is there: the code's
    file, line, message = unresolved[0]
    return Unresolved(
        evidence=f"{file}:{line}: {message}",
        reason="the lint reports imports of the project's build output, which does not exist "
        "until the build has run",
        advice=f"Run {_build(manifest)} first (the build writes what the import points at), "
        "then re-run.",
    )


def _output_dirs(manifest: dict[str, object]) -> set[str]:
    """Top-level folders package.json publishes from (main, module, exports, files): dist/, lib/."""
    paths = _published(manifest)
    files = manifest.get("files")
    paths += [f for f in files if isinstance(f, str)] if isinstance(files, list) else []
    tops = {os.path.normpath(p).split(os.sep)[0] for p in paths}
    return {t for t in tops if t not in (".", "..", "") and "." not in t}


def _spec(m: re.Match[str]) -> str:
    return m["a"] or m["b"] or m["c"]


def _relative(spec: str) -> bool:
    return spec.startswith((".", "/", "node:", "#")) or ":" in spec


def _package(spec: str) -> str:
    parts = spec.split("/")
    return "/".join(parts[:2]) if spec.startswith("@") else parts[0]


def _manifest(root: str) -> dict[str, object] | None:
    try:
        with open(os.path.join(root, "package.json"), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _why(name: str, manifest: dict[str, object], root: str) -> tuple[str, str] | None:
    if os.path.exists(os.path.join(root, ".pnp.cjs")):  # yarn PnP: no node_modules to look in
        return None
    if name == manifest.get("name") and not _exported_files_exist(manifest, root):
        return (
            f"the project imports its own package {name!r}, whose exports point at build output "
            "that does not exist yet",
            f"Run {_build(manifest)} first (as the project's CI does before its tests), then re-run.",
        )
    declared = any(name in _section(manifest, key) for key in _DEPENDENCIES)
    if declared and not os.path.isdir(os.path.join(root, "node_modules", name)):
        return (
            f"the dependency {name!r} (package.json) is not installed in node_modules",
            "Install the dependencies (npm install, or the project's package manager), then re-run.",
        )
    return None


def _build(manifest: dict[str, object]) -> str:
    return "`npm run build`" if "build" in _section(manifest, "scripts") else "the project's build"


def _section(manifest: dict[str, object], key: str) -> dict[str, object]:
    value = manifest.get(key)
    return value if isinstance(value, dict) else {}


def _exported_files_exist(manifest: dict[str, object], root: str) -> bool:
    """Whether the files package.json sends importers to (exports, main, module) are there."""
    targets = _published(manifest)
    return not targets or all(os.path.exists(os.path.join(root, t)) for t in targets)


def _published(manifest: dict[str, object]) -> list[str]:
    """The files package.json sends importers to: exports (no patterns), main, module."""
    targets = [t for t in _targets(manifest.get("exports")) if "*" not in t]
    return targets + [t for key in ("main", "module") if isinstance(t := manifest.get(key), str)]


def _targets(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _targets(v)]
    if isinstance(value, list):
        return [t for v in value for t in _targets(v)]
    return []

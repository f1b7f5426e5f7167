"""Where a Python project declares the distribution of a module its tests could not import.

A fresh clone installed with ``pip install -e .`` lacks what the project keeps in an extra
(pyparsing's ``diagrams``: ``railroad-diagrams`` for ``import railroad``) or a dependency group
(structlog's ``tests``: ``time-machine`` for ``import time_machine``). The advice is the
project's own install of that extra or group, not ``pip install <module>``, which may fetch an
unrelated distribution of that name.
"""

from __future__ import annotations

import re
from pathlib import Path

from greenloop import toml_cache

TYPE_CHECKING = False  # not typing's, nor tomllib at import: the hooks load this on every call
if TYPE_CHECKING:
    from typing import Any

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def declared_install(module: str, root: Path, pip_names: dict[str, str]) -> str:
    """The advice naming the extra or dependency group that declares ``module``; "" if none does."""
    project = _pyproject(root)
    top = module.split(".", maxsplit=1)[0]
    wanted = {_norm(top), _norm(pip_names.get(top, top))}
    extras = project.get("project", {}).get("optional-dependencies", {})
    for extra, reqs in extras.items() if isinstance(extras, dict) else ():
        dist = _provider(reqs, wanted)
        if dist:
            return (
                f"`{dist}` is in the project's `{extra}` extra: install it where the verifier "
                f"runs (`pip install -e '.[{extra}]'`), then re-run."
            )
    groups = project.get("dependency-groups", {})
    for group, reqs in groups.items() if isinstance(groups, dict) else ():
        dist = _provider(reqs, wanted)
        if dist:
            return (
                f"`{dist}` is in the project's `{group}` dependency group: install it where the "
                f"verifier runs (`pip install --group {group}`, pip 25.1 or later), then re-run."
            )
    return ""


def _pyproject(root: Path) -> dict[str, Any]:
    path = root / "pyproject.toml"
    if not path.is_file():
        return {}
    try:
        return toml_cache.load(path)
    except (OSError, ValueError):  # tomllib.TOMLDecodeError is a ValueError
        return {}


def _provider(reqs: object, wanted: set[str]) -> str:
    """The requirement whose distribution provides a wanted module: its very name, or the name
    and a suffix (``railroad-diagrams``), or ``python-`` and the name."""
    for req in reqs if isinstance(reqs, list) else ():
        m = _NAME.match(req) if isinstance(req, str) else None
        if m is None:
            continue
        name = _norm(m.group(1))
        if any(name in (w, f"python-{w}") or name.startswith(f"{w}-") for w in wanted):
            return m.group(1)
    return ""


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()

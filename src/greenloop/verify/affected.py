"""Affected tests (issue 29): the tests an edit can break, run after the failing ones pass and
before the full gate, so a regression elsewhere shows in a fraction of a full run.

Python: a map from each test (pytest node id) to the project files it executed, recorded by our
pytest plugin with coverage.py's per-test contexts on a full run that came out green, stored under
the git dir (``<git common dir>/greenloop/affected/<stage>.json``). coverage is the project's own
(used when its environment has it, like pytest-cov's users do): greenloop gains no dependency.
Without a map (no coverage, never green yet, stale, corrupt) the import graph of the test modules
stands in (``affected_imports``).

The map is trusted only for what it knows: it carries a fingerprint of the dependency manifests,
the test configuration and every ``conftest.py``, and the hash of every file it maps; a changed
fingerprint makes it stale (rebuilt on the next green run, never used), a corrupt file is deleted
and rebuilt, and a test file that changed is selected whole (its entries are the invalid part).
A non-Python file the map cannot know about gives no selection: the gate's full run decides.
The selection only ever saves time: success is still declared on the full cascade alone.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from greenloop.verify import affected_imports

VERSION = 1
COVERAGE_ENV = "GREENLOOP_PYTEST_COVERAGE"
_CONFIG_NAMES = frozenset(
    {"pyproject.toml", "setup.cfg", "setup.py", "tox.ini", "pytest.ini", ".pytest.ini",
     "noxfile.py", "conftest.py", "Pipfile", "Pipfile.lock", "poetry.lock", "uv.lock",
     "pdm.lock", "pylock.toml", ".coveragerc"}
)  # fmt: skip
_REQUIREMENTS = re.compile(r"(?:^|/)(?:requirements|constraints)[^/]*\.(?:txt|in)$|^requirements/")
_UNRELATED = re.compile(r"(?:\.(?:md|rst)$|^docs?/|^\.github/|^LICEN[CS]E|^CHANGE)", re.I)


@dataclass(frozen=True, slots=True, kw_only=True)
class Choice:
    """What the affected step runs, and why (the plan's and the report's words)."""

    tests: tuple[str, ...]
    """Node ids and whole test files; empty: nothing to run before the gate."""
    reason: str
    source: str = ""
    """``map`` or ``imports``; ``""`` when there is no selection."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Map:
    commit: str
    fingerprint: dict[str, str]
    hashes: dict[str, str]
    tests: dict[str, list[str]]
    prefix: str = ""
    """pytest's rootdir inside the repository (``""``: the same): test ids are relative to it."""


def store_path(repo_dir: Path | None, stage_name: str) -> Path | None:
    if repo_dir is None:
        return None
    return repo_dir / "affected" / (re.sub(r"[^A-Za-z0-9_.-]", "_", stage_name) + ".json")


def fingerprint(root: Path, files: Iterable[str], command: str) -> dict[str, str]:
    """The inputs whose change invalidates every entry: manifests, configuration, conftests."""
    found = {"<command>": _digest(command.encode())}
    for name in sorted(f for f in files if _is_config(f)):
        found[name] = _file_hash(root / name)
    return found


def _is_config(path: str) -> bool:
    return os.path.basename(path) in _CONFIG_NAMES or bool(_REQUIREMENTS.search(path))


def load(path: Path | None, root: Path, files: Sequence[str], command: str) -> Map | str:
    """The stored map, or why there is none usable (a corrupt file is deleted: rebuilt)."""
    if path is None:
        return "no map: the git dir is not writable"
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        found = Map(
            commit=str(raw["commit"]),
            fingerprint=_str_dict(raw["fingerprint"]),
            hashes=_str_dict(raw["hashes"]),
            tests={str(k): [str(f) for f in v] for k, v in dict(raw["tests"]).items()},
            prefix=str(raw.get("prefix", "")),
        )
        if raw.get("version") != VERSION or not found.tests:
            raise ValueError("unknown version")
    except FileNotFoundError:
        return "no map yet (recorded on a green full run)"
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        with contextlib.suppress(OSError):
            path.unlink()
        return "map corrupt: deleted, rebuilt on the next green full run"
    now = fingerprint(root, files, command)
    if now != found.fingerprint:
        what = sorted(
            k for k in {*now, *found.fingerprint} if now.get(k) != found.fingerprint.get(k)
        )
        return f"map stale ({', '.join(what[:3])} changed): rebuilt on the next green full run"
    return found


def _str_dict(value: object) -> dict[str, str]:
    if not isinstance(value, dict):
        raise TypeError("not an object")
    return {str(k): str(v) for k, v in value.items()}


def choose(
    path: Path | None,
    root: Path,
    *,
    files: Sequence[str],
    changed: Sequence[str],
    command: str,
) -> Choice:
    """The tests ``changed`` can affect: by the map when it is usable, else by the imports."""
    found = load(path, root, files, command)
    changed = tuple(dict.fromkeys(changed))
    opaque = [f for f in changed if not f.endswith(".py") and not _UNRELATED.search(f)]
    if opaque:
        return Choice(tests=(), reason=f"none: {opaque[0]} is not Python, the gate decides")
    if isinstance(found, Map):
        return _by_map(found, root, files, changed)
    py = [f for f in changed if f.endswith(".py")]
    kept = path.parent / "imports.json" if path is not None else None
    tests = affected_imports.tests_reaching(root, files, py, cache=kept)
    if not tests:
        return Choice(tests=(), reason=f"none: {found}; the import graph found nothing")
    total = len(affected_imports.test_files(files))
    return Choice(
        tests=tests,
        # no parentheses around `found`: it may hold its own (`map stale (conftest.py changed)`)
        reason=f"{_count(len(tests), 'test file')} of {total:,} by the import graph: {found}",
        source="imports",
    )


def _by_map(found: Map, root: Path, files: Sequence[str], changed: Sequence[str]) -> Choice:
    dirty = set(_drifted(found, root)) | {f for f in changed if f not in found.hashes}
    mapped_files = {found.prefix + t.split("::", 1)[0] for t in found.tests}
    new_tests = [
        f
        for f in affected_imports.test_files(dirty)
        if f not in mapped_files and (root / f).exists()
    ]
    chosen = [t for t, used in found.tests.items() if dirty.intersection(used)]
    # a changed test file runs whole: its old entries are the invalid part of the map
    whole = {f[len(found.prefix) :] for f in dirty if f in mapped_files and (root / f).exists()}
    new = [f[len(found.prefix) :] for f in new_tests if f.startswith(found.prefix)]
    tests = _compact(found.tests, chosen, whole) + new
    count = sum(1 for t in found.tests if t in chosen or t.split("::", 1)[0] in whole)
    reason = (
        f"{_count(count, 'affected test')} of {len(found.tests):,}"
        + (f" + {_count(len(new_tests), 'new test file')}" if new_tests else "")
        + f" (map from green run {found.commit[:7]})"
    )
    if not tests:
        return Choice(tests=(), reason=f"none: no test executes what changed ({reason})")
    return Choice(tests=tuple(tests), reason=reason, source="map")


def _compact(all_tests: Mapping[str, list[str]], chosen: list[str], whole: set[str]) -> list[str]:
    """Node ids, a file standing for all of its tests when every one is chosen; the closest
    first: a changed test file, then by how few of the project's files a test executes (a unit
    test of the changed module before a test that goes through the whole package), so that a
    run that stops at its first failures stops early."""
    per_file: dict[str, list[str]] = {}
    for test in all_tests:
        per_file.setdefault(test.split("::", 1)[0], []).append(test)
    picked = set(chosen)
    entries: list[tuple[int, int, list[str]]] = []
    for n, (file, tests) in enumerate(per_file.items()):
        mine = sorted((t for t in tests if t in picked), key=lambda t: len(all_tests[t]))
        if file in whole:
            entries.append((0, n, [file]))
        elif mine:
            closest = len(all_tests[mine[0]]) + 1
            entries.append((closest, n, [file] if len(mine) == len(tests) else mine))
    return [entry for _, _, part in sorted(entries) for entry in part]


def _drifted(found: Map, root: Path) -> list[str]:
    return [f for f, h in found.hashes.items() if _file_hash(root / f) != h]


# ---- recording (on a full run; kept only when it came out green) ----


def recording_dir(path: Path) -> Path:
    return path.parent / f"recording-{os.getpid()}"


def start_recording(path: Path | None) -> dict[str, str]:
    """The environment that has our plugin record per-test coverage into a fresh folder."""
    if path is None:
        return {}
    where = recording_dir(path)
    shutil.rmtree(where, ignore_errors=True)
    return {COVERAGE_ENV: str(where)}


def finish_recording(
    path: Path | None,
    root: Path,
    *,
    green: bool,
    files: Sequence[str],
    command: str,
    commit: str,
) -> bool:
    """Merge the recorded parts into the map when the run was green; always drop the parts."""
    if path is None:
        return False
    where = recording_dir(path)
    try:
        tests: dict[str, set[str]] = {}
        prefix = ""
        for part in sorted(where.glob("map-*.json")) if green else ():
            data = json.loads(part.read_text(encoding="utf-8"))
            base = Path(data["root"])
            prefix = _relative(base, root)
            prefix = prefix + "/" if prefix and prefix != "." else ""
            for test, used in dict(data["tests"]).items():
                rel = [_relative(base / u, root) for u in used]
                tests.setdefault(test, set()).update(r for r in rel if r)
        if not tests:
            return False
        mapped = sorted({f for used in tests.values() for f in used})
        body = {
            "version": VERSION,
            "commit": commit,
            "fingerprint": fingerprint(root, files, command),
            "hashes": {f: _file_hash(root / f) for f in mapped},
            "tests": {t: sorted(u) for t, u in sorted(tests.items())},
            "prefix": prefix,
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(body), encoding="utf-8")
        tmp.replace(path)
        return True
    except (OSError, ValueError, KeyError, TypeError):
        return False
    finally:
        shutil.rmtree(where, ignore_errors=True)


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return ""


def _file_hash(path: Path) -> str:
    try:
        return _digest(path.read_bytes())
    except OSError:
        return "-"


def _digest(data: bytes) -> str:
    return hashlib.sha1(data, usedforsecurity=False).hexdigest()


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"

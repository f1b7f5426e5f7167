"""A parsed TOML file, kept as JSON while the file is unchanged (issue 16).

The Stop hook reads ``pyproject.toml`` on every agent turn, and importing ``tomllib`` (with the
``typing``, ``datetime`` and ``string`` it pulls in) costs more than all the rest of reading the
configuration. The parsed file is stored under the user's cache directory, named after the file's
device and inode, and used only while the file's path, size, mtime and ctime (nanoseconds) are the
ones it was parsed at: any write changes the ctime. Files holding dates or times are not stored.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from contextlib import suppress
from pathlib import Path

from greenloop.cachedir import user_cache

TYPE_CHECKING = False  # not typing's: the point of this module is not to import it
if TYPE_CHECKING:
    from typing import Any

KEEP_S = 7 * 24 * 3600.0
"""Entries older than this are deleted when a new one is written."""


def load(path: Path, environ: Mapping[str, str] = os.environ) -> dict[str, Any]:
    """``tomllib.loads`` of the file, from the cache when it holds this very version."""
    with path.open("rb") as handle:
        info = os.fstat(handle.fileno())
        stamp = [str(path), info.st_size, info.st_mtime_ns, info.st_ctime_ns]
        store = _store(environ)
        entry = store / f"{info.st_dev}-{info.st_ino}.json" if store else None
        cached = _read(entry, stamp) if entry else None
        if cached is not None:
            return cached
        text = handle.read().decode("utf-8")
    import tomllib

    data = tomllib.loads(text)
    if entry is not None:
        _write(entry, stamp, data)
    return data


def _store(environ: Mapping[str, str]) -> Path | None:
    cache = user_cache(environ)
    return cache / "toml" if cache is not None else None


def _read(entry: Path, stamp: list[object]) -> dict[str, Any] | None:
    try:
        saved = json.loads(entry.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(saved, dict) or saved.get("stamp") != stamp:
        return None
    data = saved.get("data")
    return data if isinstance(data, dict) else None


def _write(entry: Path, stamp: list[object], data: dict[str, Any]) -> None:
    try:
        text = json.dumps({"stamp": stamp, "data": data})
    except (TypeError, ValueError, RecursionError):
        return  # a date or a time (JSON would not give it back as it was), or too deep
    with suppress(OSError):
        entry.parent.mkdir(parents=True, exist_ok=True)
        _prune(entry.parent)
        partial = entry.with_name(f".{entry.name}.{os.getpid()}")
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, entry)


def _prune(directory: Path) -> None:
    old = time.time() - KEEP_S
    for item in os.scandir(directory):
        with suppress(OSError):
            if item.stat().st_mtime < old:
                os.unlink(item.path)

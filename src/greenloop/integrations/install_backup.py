"""Where install keeps a configuration file's bytes before it changes them, and how uninstall gets
them back: ``$XDG_STATE_HOME/greenloop/backups/<hash of the path>/`` holds ``original`` (absent when
there was no file) and ``manifest.json`` (whether it existed, the folders install made, a hash of
what install wrote). Every write is atomic and keeps the file's mode."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from greenloop.errors import FatalError


def atomic_write(path: Path, content: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(content)
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def backup_dir(path: Path, environ: Mapping[str, str] = os.environ) -> Path:
    state = environ.get("XDG_STATE_HOME") or (
        os.path.join(environ["HOME"], ".local", "state") if environ.get("HOME") else ""
    )
    if not state:
        raise FatalError("neither XDG_STATE_HOME nor HOME is set: nowhere to keep a backup")
    key = hashlib.sha256(os.fsencode(path.absolute())).hexdigest()[:16]
    return Path(state) / "greenloop" / "backups" / key


def backup_file(path: Path) -> Path:
    return backup_dir(path) / "original"


def save_backup(path: Path, original: bytes | None) -> None:
    folder = backup_dir(path)
    folder.mkdir(parents=True, exist_ok=True)
    if original is not None:
        atomic_write(folder / "original", original)
    else:
        (folder / "original").unlink(missing_ok=True)
    manifest = {"path": str(path.absolute()), "existed": original is not None, "created": []}
    atomic_write(folder / "manifest.json", json.dumps(manifest, indent=2).encode())


def record(path: Path, *, installed: bytes, created: list[str]) -> None:
    manifest = load_manifest(path)
    if manifest is None:
        return
    if created:
        manifest["created"] = created
    manifest["installed"] = hashlib.sha256(installed).hexdigest()
    atomic_write(backup_dir(path) / "manifest.json", json.dumps(manifest, indent=2).encode())


def load_manifest(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((backup_dir(path) / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def forget_backup(path: Path) -> None:
    shutil.rmtree(backup_dir(path), ignore_errors=True)


def remove_created(manifest: Mapping[str, Any]) -> None:
    """The folders install made, deepest first, while they are empty."""
    for folder in manifest.get("created", []):
        try:
            Path(folder).rmdir()
        except OSError:
            break  # not empty: something else lives there now


def read_checked(path: Path) -> bytes | None:
    """The file's bytes (None: absent); refuses what greenloop must not write over."""
    if path.is_symlink():
        raise FatalError(
            f"{path} is a symbolic link (to {os.readlink(path)}): another tool manages it; add "
            "greenloop's entries there by hand, or replace the link with a file"
        )
    try:
        return path.read_bytes() if path.exists() else None
    except OSError as exc:
        raise FatalError(f"cannot read {path}: {exc.strerror}") from exc

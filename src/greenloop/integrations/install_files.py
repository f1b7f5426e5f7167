"""Configuration greenloop writes as text of its own rather than JSON entries: a file that is
greenloop's alone (OpenCode's plugin), written whole and removed whole."""

from __future__ import annotations

from greenloop.errors import FatalError
from greenloop.integrations.install_backup import (
    atomic_write,
    forget_backup,
    load_manifest,
    read_checked,
    record,
    remove_created,
    save_backup,
)
from greenloop.integrations.install_hosts import OURS, Target


def install_file(spec: Target) -> str:
    """Write the file whole; one that is not greenloop's is refused."""
    original = read_checked(spec.path)
    if original is not None and not is_our_file(spec):
        raise FatalError(
            f"{spec.path} is not greenloop's: nothing was changed (move it aside, then re-run)"
        )
    if original == spec.content.encode():
        return "greenloop's hooks are already in"
    if original is None:
        save_backup(spec.path, None)
    created = [str(p) for p in (spec.path.parent, *spec.path.parent.parents) if not p.exists()]
    spec.path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(spec.path, spec.content.encode())
    if original is None:
        record(spec.path, installed=spec.path.read_bytes(), created=created)
        return "added greenloop's hooks to"
    return "updated greenloop's hooks in"


def uninstall_file(spec: Target) -> str:
    read_checked(spec.path)
    if not is_our_file(spec):
        return "no greenloop hooks in"
    spec.path.unlink()
    manifest = load_manifest(spec.path)
    if manifest is not None and not manifest.get("existed"):
        remove_created(manifest)
        forget_backup(spec.path)
        return "restored, as it was before install,"
    return "removed greenloop's hooks from"


def is_our_file(spec: Target) -> bool:
    try:
        head = spec.path.read_text(encoding="utf-8", errors="replace")[:4096]
    except OSError:
        return False
    return head.startswith("// greenloop's plugin") and bool(OURS.search(head))

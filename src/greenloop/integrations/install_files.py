"""Configuration greenloop writes as text of its own rather than JSON entries: a file that is
greenloop's alone (OpenCode's plugin), written whole and removed whole; a block of text appended to
a file that is not (Kimi Code's TOML ``[[hooks]]`` table), removed to the byte; and the files a
JSON file needs beside it (Goose's plugin manifest)."""

from __future__ import annotations

import re
import tomllib

from greenloop.errors import FatalError
from greenloop.integrations.install_backup import (
    atomic_write,
    backup_file,
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


def our_block(spec: Target, text: str) -> re.Match[str] | None:
    """Greenloop's table in the text, however install spelled greenloop: the block's first line
    (its comment) and the ``key = value`` lines that follow it."""
    head = spec.block.lstrip("\n").splitlines()[0]
    return re.search(rf"\n?{re.escape(head)}\n\[\[hooks\]\]\n(?:[a-z_]+ = [^\n]*\n)*", text)


def install_block(spec: Target) -> str:
    """Append the block once; the file must stay valid TOML (the host would not start else)."""
    original = read_checked(spec.path)
    text = _toml_text(spec, original)
    if spec.block in text:
        return "greenloop's hooks are already in"
    found = our_block(spec, text)
    if found:  # another spelling of greenloop (a venv's path): brought up to date
        text = text[: found.start()] + text[found.end() :]
    elif OURS.search(text):
        raise FatalError(
            f"{spec.path} already runs greenloop in a table of its own: nothing was changed "
            "(remove it, then re-run)"
        )
    joined = text + ("\n" if text and not text.endswith("\n") else "") + spec.block
    _toml_text(spec, joined.encode())
    if not found:
        save_backup(spec.path, original)
    created = [str(p) for p in (spec.path.parent, *spec.path.parent.parents) if not p.exists()]
    spec.path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(spec.path, joined.encode())
    record(spec.path, installed=joined.encode(), created=created)
    return "updated greenloop's hooks in" if found else "added greenloop's hooks to"


def uninstall_block(spec: Target) -> str:
    text = (read_checked(spec.path) or b"").decode("utf-8", "replace")
    found = our_block(spec, text)
    if not found:
        return "no greenloop hooks in"
    remainder = text[: found.start()] + text[found.end() :]
    manifest = load_manifest(spec.path)
    if manifest is not None and not manifest.get("existed") and not remainder.strip():
        spec.path.unlink()
        remove_created(manifest)
        forget_backup(spec.path)
        return "restored, as it was before install,"
    original = backup_file(spec.path)
    before = original.read_bytes() if manifest and original.is_file() else None
    if before is not None and before.rstrip(b"\n") == remainder.encode().rstrip(b"\n"):
        atomic_write(spec.path, before)
        forget_backup(spec.path)
        return "restored, as it was before install,"
    atomic_write(spec.path, remainder.encode())
    return "removed greenloop's hooks from"


def _toml_text(spec: Target, raw: bytes | None) -> str:
    text = (raw or b"").decode("utf-8", "replace")
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise FatalError(
            f"cannot read {spec.path} as TOML ({exc}); fix it, then re-run (nothing was changed)"
        ) from exc
    return text


def write_companions(spec: Target) -> None:
    for path, text in spec.companions:
        if not path.exists():
            atomic_write(path, text.encode())


def remove_companions(spec: Target) -> None:
    for path, text in spec.companions:
        try:
            if path.read_text(encoding="utf-8") == text:
                path.unlink()
        except OSError:
            pass

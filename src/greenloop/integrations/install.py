"""``greenloop install HOST`` / ``uninstall HOST`` / ``install --list``: greenloop's hooks in each
agent host's configuration (where, and which entries: ``install_hosts.py``).

Install merges its entries into what is there (every other setting and hook kept), is idempotent,
writes atomically, and first keeps the file's bytes under ``$XDG_STATE_HOME/greenloop/backups``.
Uninstall removes only greenloop's entries; a file whose other content did not change since install
gets its original bytes back (or is removed, with the folders install made, when install created
it). A file that is not valid JSON, is a symbolic link, or is another tool's is refused with one
line saying why, and nothing is written.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from greenloop.errors import FatalError
from greenloop.integrations.install_hosts import (
    BUILDERS,
    Entry,
    Settings,
    Target,
    codex_config,
    target,
    timeout_of,
)

OURS = re.compile(r"\bgreenloop hook (?:stop|claude-stop|post-tool)\b")
HOOK_COMMAND = "greenloop hook stop"


def main_install(args: argparse.Namespace) -> int:
    if args.list:
        return main_list(args)
    if not args.target:
        raise FatalError("install what? name a host: " + ", ".join(BUILDERS) + " (or --list)")
    root = project_root(Path(args.repo))
    spec = target(
        args.target,
        root,
        global_=args.global_,
        settings=settings_for(
            root,
            global_=args.global_,
            tool_output=args.tool_output,
            wrap=getattr(args, "wrap", False),
            goal=getattr(args, "goal", False),
        ),
        environ=os.environ,
    )
    warning = codex_config(root, os.environ) if args.target == "codex" else ""
    done = install(spec)
    print(f"greenloop: {done} {spec.path} ({', '.join(e.event for e in spec.entries)})")
    base = spec.entries[0].hook.get(spec.command_key, "")
    if not str(base).startswith("greenloop "):
        print(
            f"  it runs {base}: the `greenloop` on PATH (if any) is not this one, and "
            f"{args.target} would not find this one by name. For settings others share, put "
            "greenloop on PATH and run install again."
        )
    for note in (spec.note, warning):
        if note:
            print(f"  {note}")
    return 0


def main_uninstall(args: argparse.Namespace) -> int:
    root = project_root(Path(args.repo))
    spec = target(
        args.target,
        root,
        global_=args.global_,
        settings=Settings(base="greenloop"),
        environ=os.environ,
    )
    print(f"greenloop: {uninstall(spec)} {spec.path}")
    return 0


def main_list(args: argparse.Namespace) -> int:
    from greenloop.integrations.host_facts import render_table

    root = project_root(Path(args.repo))
    print("\n".join(render_table()))
    print("\nwhat is installed where:")
    for host in BUILDERS:
        for global_ in (False, True):
            try:
                spec = target(
                    host,
                    root,
                    global_=global_,
                    settings=Settings(base="greenloop"),
                    environ=os.environ,
                )
                state = describe(spec)
            except FatalError as exc:
                state, spec = str(exc), None
            where = "global " if global_ else "project"
            print(f"{host:9} {where} {state}" + (f"  {spec.path}" if spec else ""))
    return 0


def describe(spec: Target) -> str:
    if not spec.path.exists():
        return "no file"
    if spec.content:
        return "installed: plugin" if _is_our_file(spec) else "another tool's file"
    try:
        data = read_config(spec.path)
    except FatalError as exc:
        return f"unreadable ({exc})"
    events = [e for e in spec.events if _ours_under(data, spec, e)]
    return "installed: " + ", ".join(events) if events else "not installed"


def project_root(repo: Path) -> Path:
    from greenloop import git

    root = git.get_root(repo) if repo.is_dir() else None
    return root or repo.resolve()


def settings_for(
    root: Path, *, global_: bool, tool_output: bool, wrap: bool = False, goal: bool = False
) -> Settings:
    from greenloop.config import Config, load_config

    config = Config() if global_ else load_config(root)
    return Settings(
        base=greenloop_base(),
        timeout_s=timeout_of(config),
        max_iters=config.max_iters,
        tool_output=tool_output,
        wrap=wrap,
        goal=goal,
    )


def greenloop_base(environ: Mapping[str, str] = os.environ) -> str:
    """``greenloop`` when the ``greenloop`` on PATH is this installation (its script runs an
    interpreter of this one's folder: ``python3`` beside ``python``); else this installation by its
    path, which a host started from another shell (no venv activated) still finds."""
    found = shutil.which("greenloop", path=environ.get("PATH"))
    here = os.path.dirname(os.path.abspath(sys.executable))
    if found and os.path.dirname(_interpreter_of(found)) == here:
        return "greenloop"
    return f"{shlex.quote(os.path.abspath(sys.executable))} -m greenloop"


def hook_command(environ: Mapping[str, str] = os.environ) -> str:
    return f"{greenloop_base(environ)} hook stop"


def _interpreter_of(script: str) -> str:
    """The interpreter a console script's ``#!`` line names ("" for anything else)."""
    try:
        with open(script, "rb") as handle:
            first = handle.readline(4096).decode("utf-8", "replace")
    except OSError:
        return ""
    return os.path.abspath(first[2:].strip()) if first.startswith("#!/") else ""


# ---------------------------------------------------------------- install / uninstall


def install(spec: Target) -> str:
    """Merge our entries in; "added … to", "updated … in" or "… already in"."""
    if spec.content:
        return _install_file(spec)
    original = _checked(spec)
    data = read_config(spec.path)
    _refuse_foreign(spec, data)
    had_ours = any(_ours_under(data, spec, e) for e in spec.events)
    changed = False
    for entry in spec.entries:
        changed |= _merge(data, spec, entry)
    if not changed:
        return "greenloop's hooks are already in"
    if not had_ours:
        save_backup(spec.path, original)
    if not spec.grouped:
        data.setdefault("version", 1)
    created = write_config(spec.path, data)
    _record(spec.path, installed=spec.path.read_bytes(), created=created)
    return "updated greenloop's hooks in" if had_ours else "added greenloop's hooks to"


def uninstall(spec: Target) -> str:
    if not spec.path.exists():
        return "no greenloop hooks in"
    if spec.content:
        return _uninstall_file(spec)
    _checked(spec)
    data = read_config(spec.path)
    removed = False
    for event in _every_event(data, spec):
        removed |= _remove(data, spec, event)
    if not removed:
        return "no greenloop hooks in"
    manifest = load_manifest(spec.path)
    if manifest is not None and _restore(spec, data, manifest):
        return "restored, as it was before install,"
    write_config(spec.path, data)
    return "removed greenloop's hooks from"


def _install_file(spec: Target) -> str:
    """A file of greenloop's own (OpenCode's plugin): written whole; another's is refused."""
    original = _checked(spec)
    if original is not None and not _is_our_file(spec):
        raise FatalError(
            f"{spec.path} is not greenloop's: nothing was changed (move it aside, then re-run)"
        )
    if original == spec.content.encode():
        return "greenloop's hooks are already in"
    if original is None:
        save_backup(spec.path, None)
    created = [str(p) for p in (spec.path.parent, *spec.path.parent.parents) if not p.exists()]
    spec.path.parent.mkdir(parents=True, exist_ok=True)
    _atomic_write(spec.path, spec.content.encode())
    if original is None:
        _record(spec.path, installed=spec.path.read_bytes(), created=created)
        return "added greenloop's hooks to"
    return "updated greenloop's hooks in"


def _uninstall_file(spec: Target) -> str:
    _checked(spec)
    if not _is_our_file(spec):
        return "no greenloop hooks in"
    manifest = load_manifest(spec.path)
    if manifest is not None and _restore(spec, {}, manifest):
        return "restored, as it was before install,"
    spec.path.unlink()
    return "removed greenloop's hooks from"


def _is_our_file(spec: Target) -> bool:
    try:
        head = spec.path.read_text(encoding="utf-8", errors="replace")[:4096]
    except OSError:
        return False
    return head.startswith("// greenloop's plugin") and bool(OURS.search(head))


def _every_event(data: Mapping[str, Any], spec: Target) -> list[str]:
    """The events install writes, then every other event of the file: an entry the user added
    (Claude Code's opt-in PreToolUse wrap) runs greenloop too and must not outlive it."""
    hooks = data.get("hooks")
    found = [str(e) for e in hooks] if isinstance(hooks, dict) else []
    return [*spec.events, *(e for e in found if e not in spec.events)]


def _checked(spec: Target) -> bytes | None:
    """The file's bytes (None: absent); refuses what greenloop must not write over."""
    path = spec.path
    if path.is_symlink():
        raise FatalError(
            f"{path} is a symbolic link (to {os.readlink(path)}): another tool manages it; add "
            "greenloop's entries there by hand, or replace the link with a file"
        )
    try:
        return path.read_bytes() if path.exists() else None
    except OSError as exc:
        raise FatalError(f"cannot read {path}: {exc.strerror}") from exc


def _refuse_foreign(spec: Target, data: Mapping[str, Any]) -> None:
    if not spec.own_file or not data:
        return
    hooks = data.get("hooks")
    foreign = [
        h
        for entries in (hooks.values() if isinstance(hooks, dict) else ())
        for h in (entries if isinstance(entries, list) else ())
        if not _is_ours(h, spec)
    ]
    if foreign or not isinstance(hooks, dict):
        raise FatalError(
            f"{spec.path} holds hooks that are not greenloop's: another tool's file; "
            "nothing was changed (move it aside, or add greenloop's entry there by hand)"
        )


def _restore(spec: Target, remainder: dict[str, Any], manifest: Mapping[str, Any]) -> bool:
    """Put the pre-install bytes back when nothing but our entries changed since; True if done."""
    original = backup_file(spec.path)
    if manifest.get("existed"):
        if not original.is_file():
            return False
        try:
            before = json.loads(original.read_bytes() or b"{}")
        except ValueError:
            return False
        if not isinstance(before, dict) or _bare(before) != _bare(remainder):
            return False
        _atomic_write(spec.path, original.read_bytes())
    else:
        if _bare(remainder) not in ({}, {"version": 1}):
            return False
        spec.path.unlink()
        for folder in manifest.get("created", []):  # deepest first
            try:
                Path(folder).rmdir()
            except OSError:
                break  # not empty: something else lives there now
    forget_backup(spec.path)
    return True


def _bare(data: Mapping[str, Any]) -> dict[str, Any]:
    """The data without an empty ``hooks`` table (install may leave one, or find one)."""
    return {k: v for k, v in data.items() if not (k == "hooks" and v == {})}


def _merge(data: dict[str, Any], spec: Target, entry: Entry) -> bool:
    """Put one entry in (or bring ours up to date); True when the data changed."""
    handlers = _event_list(data, spec, entry.event)
    ours = _our_handlers(handlers, spec)
    wanted = dict(entry.hook)
    if ours:
        if all(h == wanted for h in ours):
            return False
        for h in ours:
            h.clear()
            h.update(wanted)
        return True
    if spec.grouped:
        group: dict[str, Any] = {"matcher": entry.matcher} if entry.matcher else {}
        handlers.append({**group, "hooks": [wanted]})
    else:
        handlers.append(wanted)
    return True


def _remove(data: dict[str, Any], spec: Target, event: str) -> bool:
    hooks = data.get("hooks")
    if not isinstance(hooks, dict) or not isinstance(hooks.get(event), list):
        return False
    before = hooks[event]
    kept: list[Any] = []
    for item in before:
        if not spec.grouped:
            if not _is_ours(item, spec):
                kept.append(item)
            continue
        inner = _group_hooks(item)
        mine = [h for h in inner if _is_ours(h, spec)]
        if not mine:
            kept.append(item)
        elif len(mine) < len(inner):
            kept.append({**item, "hooks": [h for h in inner if not _is_ours(h, spec)]})
    if kept == before:
        return False
    if kept:
        hooks[event] = kept
    else:
        del hooks[event]
    if not hooks:
        del data["hooks"]
    return True


def _event_list(data: dict[str, Any], spec: Target, event: str) -> list[Any]:
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise FatalError(f'{spec.path}: "hooks" is not an object; fix it, then re-run')
    handlers = hooks.setdefault(event, [])
    if not isinstance(handlers, list):
        raise FatalError(f'{spec.path}: "hooks.{event}" is not a list; fix it, then re-run')
    return handlers


def _ours_under(data: Mapping[str, Any], spec: Target, event: str) -> bool:
    hooks = data.get("hooks")
    handlers = hooks.get(event) if isinstance(hooks, dict) else None
    return isinstance(handlers, list) and bool(_our_handlers(handlers, spec))


def _our_handlers(handlers: list[Any], spec: Target) -> list[dict[str, Any]]:
    if spec.grouped:
        return [h for g in handlers for h in _group_hooks(g) if _is_ours(h, spec)]
    return [h for h in handlers if _is_ours(h, spec)]


def _group_hooks(group: Any) -> list[Any]:
    hooks = group.get("hooks") if isinstance(group, dict) else None
    return hooks if isinstance(hooks, list) else []


def _is_ours(hook: Any, spec: Target) -> bool:
    return isinstance(hook, dict) and bool(OURS.search(str(hook.get(spec.command_key, ""))))


# ---------------------------------------------------------------- files


def read_config(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FatalError(
            f"cannot read {path}: {exc}; fix or move it, then re-run (nothing was changed)"
        ) from exc
    if not isinstance(data, dict):
        raise FatalError(
            f"{path} is not a JSON object; fix or move it, then re-run (nothing was changed)"
        )
    return data


def write_config(path: Path, data: Mapping[str, Any]) -> list[str]:
    """Write pretty JSON atomically; the folders it had to make, deepest first."""
    created = [str(p) for p in (path.parent, *path.parent.parents) if not p.exists()]
    path.parent.mkdir(parents=True, exist_ok=True)
    _atomic_write(path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode())
    return created


def _atomic_write(path: Path, content: bytes) -> None:
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
        _atomic_write(folder / "original", original)
    else:
        (folder / "original").unlink(missing_ok=True)
    manifest = {"path": str(path.absolute()), "existed": original is not None, "created": []}
    _atomic_write(folder / "manifest.json", json.dumps(manifest, indent=2).encode())


def _record(path: Path, *, installed: bytes, created: list[str]) -> None:
    manifest = load_manifest(path)
    if manifest is None:
        return
    if created:
        manifest["created"] = created
    manifest["installed"] = hashlib.sha256(installed).hexdigest()
    _atomic_write(backup_dir(path) / "manifest.json", json.dumps(manifest, indent=2).encode())


def load_manifest(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((backup_dir(path) / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def forget_backup(path: Path) -> None:
    shutil.rmtree(backup_dir(path), ignore_errors=True)

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
import json
import os
import shlex
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

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
from greenloop.integrations.install_files import (
    install_block,
    install_file,
    is_our_file,
    our_block,
    remove_companions,
    uninstall_block,
    uninstall_file,
    write_companions,
)
from greenloop.integrations.install_hosts import (
    BUILDERS,
    OURS,
    Entry,
    Settings,
    Target,
    codex_config,
    target,
    timeout_of,
)

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
        return "installed: plugin" if is_our_file(spec) else "another tool's file"
    if spec.block:
        text = spec.path.read_text(encoding="utf-8", errors="replace")
        return "installed: Stop" if our_block(spec, text) else "not installed"
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
        return install_file(spec)
    if spec.block:
        return install_block(spec)
    original = read_checked(spec.path)
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
    record(spec.path, installed=spec.path.read_bytes(), created=created)
    write_companions(spec)
    return "updated greenloop's hooks in" if had_ours else "added greenloop's hooks to"


def uninstall(spec: Target) -> str:
    if not spec.path.exists():
        return "no greenloop hooks in"
    if spec.content:
        return uninstall_file(spec)
    if spec.block:
        return uninstall_block(spec)
    read_checked(spec.path)
    data = read_config(spec.path)
    removed = False
    for event in _every_event(data, spec):
        removed |= _remove(data, spec, event)
    if not removed:
        return "no greenloop hooks in"
    remove_companions(spec)
    manifest = load_manifest(spec.path)
    if manifest is not None and _restore(spec, data, manifest):
        return "restored, as it was before install,"
    write_config(spec.path, data)
    return "removed greenloop's hooks from"


def _every_event(data: Mapping[str, Any], spec: Target) -> list[str]:
    """The events install writes, then every other event of the file: an entry the user added
    (Claude Code's opt-in PreToolUse wrap) runs greenloop too and must not outlive it."""
    hooks = data.get("hooks")
    found = [str(e) for e in hooks] if isinstance(hooks, dict) else []
    return [*spec.events, *(e for e in found if e not in spec.events)]


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
        atomic_write(spec.path, original.read_bytes())
    else:
        if _bare(remainder) not in ({}, {"version": 1}):
            return False
        spec.path.unlink()
        remove_created(manifest)
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
    atomic_write(path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode())
    return created

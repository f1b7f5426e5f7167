"""``greenloop install claude`` / ``uninstall claude``: our Stop hook in Claude Code's settings.

Merges one entry into ``.claude/settings.json`` (or ``~/.claude/settings.json`` with ``--global``),
keeping every other setting and hook; idempotent; written atomically as pretty JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from greenloop.errors import FatalError

HOOK_COMMAND = "greenloop hook claude-stop"
HOOK_TIMEOUT_S = 600  # Claude Code kills a hook after its timeout and lets the agent stop
HOOK_ENTRY: dict[str, Any] = {"type": "command", "command": HOOK_COMMAND, "timeout": HOOK_TIMEOUT_S}


def main_install(args: argparse.Namespace) -> int:
    path = settings_path(Path(args.repo), global_=args.global_)
    changed = install_claude(path)
    state = "added the Stop hook to" if changed else "the Stop hook is already in"
    print(f"greenloop: {state} {path}")
    return 0


def main_uninstall(args: argparse.Namespace) -> int:
    path = settings_path(Path(args.repo), global_=args.global_)
    changed = uninstall_claude(path)
    state = "removed the Stop hook from" if changed else "no greenloop Stop hook in"
    print(f"greenloop: {state} {path}")
    return 0


def settings_path(repo: Path, *, global_: bool, environ: Mapping[str, str] = os.environ) -> Path:
    if global_:
        home = environ.get("HOME")
        if not home:
            raise FatalError("HOME is not set: cannot find ~/.claude/settings.json")
        return Path(home) / ".claude" / "settings.json"
    from greenloop import git

    root = git.get_root(repo) if repo.is_dir() else None
    return (root or repo.resolve()) / ".claude" / "settings.json"


def install_claude(path: Path) -> bool:
    """Add our Stop hook unless it is there; True when the file changed."""
    settings = read_settings(path)
    stop = _stop_groups(settings, path)
    if any(_is_ours(hook) for group in stop for hook in _group_hooks(group)):
        return False
    stop.append({"hooks": [dict(HOOK_ENTRY)]})
    write_settings(path, settings)
    return True


def uninstall_claude(path: Path) -> bool:
    """Remove only our entries (and groups or keys they leave empty); True when the file changed."""
    if not path.is_file():
        return False
    settings = read_settings(path)
    stop = _stop_groups(settings, path)
    kept = []
    for group in stop:
        hooks = _group_hooks(group)
        mine = [h for h in hooks if _is_ours(h)]
        if not mine:
            kept.append(group)
        elif len(mine) < len(hooks):
            kept.append({**group, "hooks": [h for h in hooks if not _is_ours(h)]})
    if kept == stop:
        return False
    hooks_table = settings["hooks"]
    if kept:
        hooks_table["Stop"] = kept
    else:
        del hooks_table["Stop"]
    if not hooks_table:
        del settings["hooks"]
    write_settings(path, settings)
    return True


def read_settings(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FatalError(f"cannot read {path}: {exc}; fix or move it, then re-run") from exc
    if not isinstance(data, dict):
        raise FatalError(f"{path} is not a JSON object; fix or move it, then re-run")
    return data


def write_settings(path: Path, settings: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(settings, indent=2, ensure_ascii=False) + "\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _stop_groups(settings: dict[str, Any], path: Path) -> list[Any]:
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise FatalError(f'{path}: "hooks" is not an object; fix it, then re-run')
    stop = hooks.setdefault("Stop", [])
    if not isinstance(stop, list):
        raise FatalError(f'{path}: "hooks.Stop" is not a list; fix it, then re-run')
    return stop


def _group_hooks(group: Any) -> list[Any]:
    hooks = group.get("hooks") if isinstance(group, dict) else None
    return hooks if isinstance(hooks, list) else []


def _is_ours(hook: Any) -> bool:
    return isinstance(hook, dict) and HOOK_COMMAND in str(hook.get("command", ""))

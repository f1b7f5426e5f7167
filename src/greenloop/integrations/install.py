"""``greenloop install claude`` / ``uninstall claude``: our Stop hook in Claude Code's settings.

Merges one entry into ``.claude/settings.json`` (or ``~/.claude/settings.json`` with ``--global``),
keeping every other setting and hook; idempotent; written atomically as pretty JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from greenloop.errors import FatalError

HOOK_COMMAND = "greenloop hook claude-stop"
HOOK_TIMEOUT_S = 600  # Claude Code kills a hook after its timeout and lets the agent stop
HOOK_ENTRY: dict[str, Any] = {"type": "command", "command": HOOK_COMMAND, "timeout": HOOK_TIMEOUT_S}
INSTALLED = {
    "added": "added the Stop hook to",
    "updated": "updated the Stop hook's command in",
    "unchanged": "the Stop hook is already in",
}


def main_install(args: argparse.Namespace) -> int:
    path = settings_path(Path(args.repo), global_=args.global_)
    command = hook_command()
    done = install_claude(path, command)
    print(f"greenloop: {INSTALLED[done]} {path}")
    if command != HOOK_COMMAND:
        print(
            f"  it runs {command}: the `greenloop` on PATH (if any) is not this one, and Claude "
            "Code would not find this one by name. For settings others share, put greenloop on "
            "PATH and run install again."
        )
    return 0


def hook_command(environ: Mapping[str, str] = os.environ) -> str:
    """``greenloop hook claude-stop`` when the ``greenloop`` on PATH is this installation (its
    script runs an interpreter of this one's folder: ``python3`` beside ``python``); else this installation by its path, which a Claude Code started
    from another shell (no venv activated) still finds."""
    found = shutil.which("greenloop", path=environ.get("PATH"))
    here = os.path.dirname(os.path.abspath(sys.executable))
    if found and os.path.dirname(_interpreter_of(found)) == here:
        return HOOK_COMMAND
    return f"{shlex.quote(os.path.abspath(sys.executable))} -m {HOOK_COMMAND}"


def _interpreter_of(script: str) -> str:
    """The interpreter a console script's ``#!`` line names ("" for anything else)."""
    try:
        with open(script, "rb") as handle:
            first = handle.readline(4096).decode("utf-8", "replace")
    except OSError:
        return ""
    return os.path.abspath(first[2:].strip()) if first.startswith("#!/") else ""


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


def install_claude(path: Path, command: str = HOOK_COMMAND) -> str:
    """Add our Stop hook unless it is there; an entry of ours with another command (a
    ``greenloop`` Claude Code cannot find) gets this one. "added", "updated" or "unchanged"."""
    settings = read_settings(path)
    stop = _stop_groups(settings, path)
    ours = [hook for group in stop for hook in _group_hooks(group) if _is_ours(hook)]
    if ours and all(hook.get("command") == command for hook in ours):
        return "unchanged"
    for hook in ours:
        hook["command"] = command
    if not ours:
        stop.append({"hooks": [{**HOOK_ENTRY, "command": command}]})
    write_settings(path, settings)
    return "updated" if ours else "added"


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

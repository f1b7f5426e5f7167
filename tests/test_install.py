"""``greenloop install claude`` / ``uninstall claude`` through the CLI, on real settings files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

PY = sys.executable
OURS = {"type": "command", "command": "greenloop hook claude-stop", "timeout": 600}
THEIRS = {"type": "command", "command": "./scripts/notify.sh"}


# this interpreter's bin folder on PATH: its `greenloop` script is the one running
ON_PATH = f"{Path(PY).parent}{os.pathsep}{os.environ.get('PATH', '')}"


def greenloop(
    cwd: Path, *args: str, home: Path, path: str = ON_PATH
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PY, "-m", "greenloop", "-C", str(cwd), *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HOME": str(home), "PATH": path},
    )


def settings(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def our_entries(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [h for g in data["hooks"]["Stop"] for h in g["hooks"] if h == OURS]


def test_install_adds_one_stop_hook_to_the_repo_settings(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_repo({"README.md": "x\n"})
    out = greenloop(root, "install", "claude", home=tmp_path)
    assert out.returncode == 0, out.stderr
    path = root / ".claude" / "settings.json"
    assert settings(path) == {"hooks": {"Stop": [{"hooks": [OURS]}]}}
    assert path.read_text().startswith('{\n  "hooks"')  # pretty JSON


def test_install_twice_keeps_a_single_entry(make_repo: Callable[..., Path], tmp_path: Path) -> None:
    root = make_repo({"README.md": "x\n"})
    greenloop(root, "install", "claude", home=tmp_path)
    out = greenloop(root, "install", "claude", home=tmp_path)
    assert "already" in out.stdout
    assert len(our_entries(settings(root / ".claude" / "settings.json"))) == 1


def test_install_from_a_subdirectory_writes_at_the_repo_root(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_repo({"pkg/mod.py": "x = 1\n"})
    greenloop(root / "pkg", "install", "claude", home=tmp_path)
    assert (root / ".claude" / "settings.json").is_file()
    assert not (root / "pkg" / ".claude").exists()


def test_install_keeps_the_users_settings_and_other_hooks(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    before = {
        "model": "opus",
        "permissions": {"allow": ["Bash(npm test)"]},
        "hooks": {
            "Stop": [{"hooks": [THEIRS]}],
            "PostToolUse": [{"matcher": "Edit", "hooks": [THEIRS]}],
        },
    }
    root = make_repo({".claude/settings.json": json.dumps(before)})
    greenloop(root, "install", "claude", home=tmp_path)
    after = settings(root / ".claude" / "settings.json")
    assert after["model"] == "opus"
    assert after["permissions"] == before["permissions"]
    assert after["hooks"]["PostToolUse"] == before["hooks"]["PostToolUse"]
    assert after["hooks"]["Stop"] == [{"hooks": [THEIRS]}, {"hooks": [OURS]}]


def test_uninstall_removes_only_our_entry(make_repo: Callable[..., Path], tmp_path: Path) -> None:
    before = {"model": "opus", "hooks": {"Stop": [{"hooks": [THEIRS, OURS]}]}}
    root = make_repo({".claude/settings.json": json.dumps(before)})
    out = greenloop(root, "uninstall", "claude", home=tmp_path)
    assert out.returncode == 0, out.stderr
    assert settings(root / ".claude" / "settings.json") == {
        "model": "opus",
        "hooks": {"Stop": [{"hooks": [THEIRS]}]},
    }


def test_install_then_uninstall_leaves_the_settings_as_they_were(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    before = {"model": "opus"}
    root = make_repo({".claude/settings.json": json.dumps(before)})
    greenloop(root, "install", "claude", home=tmp_path)
    greenloop(root, "uninstall", "claude", home=tmp_path)
    assert settings(root / ".claude" / "settings.json") == before


def test_global_install_writes_to_the_home_settings(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_repo({"README.md": "x\n"})
    home = tmp_path / "home"
    out = greenloop(root, "install", "claude", "--global", home=home)
    assert out.returncode == 0, out.stderr
    assert our_entries(settings(home / ".claude" / "settings.json"))
    assert not (root / ".claude").exists()
    greenloop(root, "uninstall", "claude", "--global", home=home)
    assert settings(home / ".claude" / "settings.json") == {}


def test_install_refuses_a_settings_file_that_is_not_json(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_repo({".claude/settings.json": "{ not json"})
    out = greenloop(root, "install", "claude", home=tmp_path)
    assert out.returncode == 2
    assert "cannot read" in out.stderr
    assert (root / ".claude" / "settings.json").read_text() == "{ not json"


def test_uninstall_without_a_settings_file_changes_nothing(tmp_path: Path) -> None:
    out = greenloop(tmp_path, "uninstall", "claude", home=tmp_path)
    assert out.returncode == 0
    assert "no greenloop Stop hook" in out.stdout
    assert not (tmp_path / ".claude").exists()


def test_install_names_this_greenloop_by_its_path_when_claude_code_would_not_find_it_by_name(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    # `.venv/bin/greenloop install claude` from a shell without the venv on PATH: Claude Code,
    # started from another shell, would fail "greenloop: not found" on every stop
    root = make_repo({"calc.py": "x = 1\n", "test_calc.py": "def test_x():\n    assert 1\n"})
    bare = "/usr/bin:/bin"
    out = greenloop(root, "install", "claude", home=tmp_path, path=bare)
    assert out.returncode == 0, out.stderr
    command = settings(root / ".claude" / "settings.json")["hooks"]["Stop"][0]["hooks"][0][
        "command"
    ]
    assert command == f"{PY} -m greenloop hook claude-stop"
    assert "put greenloop on PATH" in out.stdout
    event = json.dumps({"session_id": "s", "stop_hook_active": False, "cwd": str(root)})
    hook = subprocess.run(
        ["sh", "-c", command],
        cwd=root,
        input=event,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HOME": str(tmp_path), "PATH": bare},
        check=False,
    )
    assert hook.returncode == 0, hook.stderr  # the hook ran (not 127: command not found)
    again = greenloop(root, "install", "claude", home=tmp_path)  # now with greenloop on PATH
    assert "updated" in again.stdout
    assert our_entries(settings(root / ".claude" / "settings.json")) == [OURS]

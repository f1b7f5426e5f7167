"""``greenloop install HOST`` / ``uninstall HOST`` through the CLI, on real settings files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from limits import hang

PY = sys.executable
OURS = {"type": "command", "command": "greenloop hook stop", "timeout": 600}
LEGACY = {"type": "command", "command": "greenloop hook claude-stop", "timeout": 600}
TOOL = {"type": "command", "command": "greenloop hook post-tool", "timeout": 60}
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
        timeout=hang(60),
        env={**os.environ, "HOME": str(home), "PATH": path, "XDG_STATE_HOME": str(home / "state")},
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
    assert settings(path) == {
        "hooks": {
            "Stop": [{"hooks": [OURS]}],
            "PostToolUse": [{"matcher": "Bash", "hooks": [TOOL]}],
            "PostToolUseFailure": [{"matcher": "Bash", "hooks": [TOOL]}],
            # the wrap, allowed only where the user's own rules run the command as written
            "PreToolUse": [{"matcher": "Bash", "hooks": [TOOL]}],
        }
    }
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
    assert after["hooks"]["PostToolUse"] == [
        *before["hooks"]["PostToolUse"],
        {"matcher": "Bash", "hooks": [TOOL]},
    ]
    assert after["hooks"]["Stop"] == [{"hooks": [THEIRS]}, {"hooks": [OURS]}]


def test_uninstall_removes_only_our_entry(make_repo: Callable[..., Path], tmp_path: Path) -> None:
    before = {"model": "opus", "hooks": {"Stop": [{"hooks": [THEIRS, LEGACY]}]}}
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
    assert not (home / ".claude").exists()  # install made it: uninstall takes it away


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
    assert "no greenloop hooks" in out.stdout
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
    assert command == f"{PY} -m greenloop hook stop"
    assert "put greenloop on PATH" in out.stdout
    event = json.dumps({"session_id": "s", "stop_hook_active": False, "cwd": str(root)})
    hook = subprocess.run(
        ["sh", "-c", command],
        cwd=root,
        input=event,
        capture_output=True,
        text=True,
        timeout=hang(120),
        env={**os.environ, "HOME": str(tmp_path), "PATH": bare},
        check=False,
    )
    assert hook.returncode == 0, hook.stderr  # the hook ran (not 127: command not found)
    again = greenloop(root, "install", "claude", home=tmp_path)  # now with greenloop on PATH
    assert "updated" in again.stdout
    assert our_entries(settings(root / ".claude" / "settings.json")) == [OURS]


# ---------------------------------------------------------------- every host

PROJECT_FILES = {
    "claude": ".claude/settings.json",
    "codex": ".codex/hooks.json",
    "gemini": ".gemini/settings.json",
    "copilot": ".github/hooks/greenloop.json",
    "cursor": ".cursor/hooks.json",
    "openhands": ".openhands/hooks.json",
}
GLOBAL_FILES = {
    "claude": ".claude/settings.json",
    "codex": ".codex/hooks.json",
    "gemini": ".gemini/settings.json",
    "copilot": ".copilot/hooks/greenloop.json",
    "cursor": ".cursor/hooks.json",
    "openhands": ".openhands/hooks.json",
}
STOP_COMMANDS = {
    "claude": "greenloop hook stop",
    "codex": "greenloop hook stop --host codex",
    "gemini": "greenloop hook stop --host gemini",
    "copilot": "greenloop hook stop --host copilot",
    "cursor": "greenloop hook stop --host cursor",
    "openhands": "greenloop hook stop --host openhands",
}
# what each host's users already have there, written the way people write it (not our layout)
THEIR_FILES = {
    "claude": '{"model": "opus",\n "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "./notify.sh"}]}]}}\n',
    "codex": '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "./notify.sh"}]}]}}',
    "gemini": '{\n    "general": {"vimMode": true},\n    "hooks": {}\n}\n',
    "copilot": "",  # greenloop's own file: nobody else's content can be there
    "cursor": '{"version": 1, "hooks": {"afterFileEdit": [{"command": "./fmt.sh"}]}}\n',
    "openhands": '{"hooks": {"PreToolUse": [{"matcher": "terminal", "hooks": [{"command": "./guard.sh"}]}]}}',
}


def stop_handlers(host: str, data: dict[str, Any]) -> list[dict[str, Any]]:
    event = {"claude": "Stop", "codex": "Stop", "gemini": "AfterAgent", "openhands": "Stop"}.get(
        host
    )
    if event:
        return [h for g in data["hooks"][event] for h in g["hooks"]]
    handlers: list[dict[str, Any]] = data["hooks"]["agentStop" if host == "copilot" else "stop"]
    return handlers


@pytest.mark.parametrize("host", sorted(PROJECT_FILES))
def test_install_writes_each_hosts_stop_hook_where_its_docs_say(
    host: str, make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_repo({"README.md": "x\n"})
    out = greenloop(root, "install", host, home=tmp_path)
    assert out.returncode == 0, out.stderr
    data = settings(root / PROJECT_FILES[host])
    [ours] = stop_handlers(host, data)
    assert ours.get("command", ours.get("bash")) == STOP_COMMANDS[host]
    again = greenloop(root, "install", host, home=tmp_path)
    assert "already" in again.stdout
    assert settings(root / PROJECT_FILES[host]) == data


@pytest.mark.parametrize("host", sorted(PROJECT_FILES))
def test_uninstall_gives_back_each_hosts_file_byte_for_byte(
    host: str, make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    files = {PROJECT_FILES[host]: THEIR_FILES[host]} if THEIR_FILES[host] else {"README.md": "x\n"}
    root = make_repo(files)
    path = root / PROJECT_FILES[host]
    before = path.read_bytes() if path.exists() else None
    assert greenloop(root, "install", host, home=tmp_path).returncode == 0
    assert path.read_bytes() != before
    out = greenloop(root, "uninstall", host, home=tmp_path)
    assert out.returncode == 0, out.stderr
    if before is None:
        assert not path.exists()
        assert not path.parent.exists()  # the folders install made went with it
    else:
        assert path.read_bytes() == before
    assert "as it was before install" in out.stdout


def test_uninstall_keeps_edits_made_since_install(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_repo({".claude/settings.json": '{"model": "opus"}'})
    greenloop(root, "install", "claude", home=tmp_path)
    path = root / ".claude" / "settings.json"
    edited = settings(path) | {"theme": "dark"}
    path.write_text(json.dumps(edited))
    greenloop(root, "uninstall", "claude", home=tmp_path)
    assert settings(path) == {"model": "opus", "theme": "dark"}


@pytest.mark.parametrize("host", sorted(GLOBAL_FILES))
def test_global_install_writes_each_hosts_user_configuration(
    host: str, make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_repo({"README.md": "x\n"})
    home = tmp_path / "home"
    out = greenloop(root, "install", host, "--global", home=home)
    assert out.returncode == 0, out.stderr
    assert stop_handlers(host, settings(home / GLOBAL_FILES[host]))
    assert not (root / PROJECT_FILES[host]).exists()
    assert greenloop(root, "uninstall", host, "--global", home=home).returncode == 0
    assert not (home / GLOBAL_FILES[host]).exists()


def test_install_raises_copilots_30_second_default_to_the_verifiers_timeout(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    config = "[tool.greenloop]\ntimeout = 900\n"
    root = make_repo({"pyproject.toml": config})
    greenloop(root, "install", "copilot", home=tmp_path)
    data = settings(root / PROJECT_FILES["copilot"])
    assert data["version"] == 1
    assert stop_handlers("copilot", data) == [
        {"type": "command", "bash": STOP_COMMANDS["copilot"], "timeoutSec": 900}
    ]


def test_install_gives_copilot_the_shell_output_hook_on_its_bash_tool_only(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_repo({"README.md": "x\n"})
    greenloop(root, "install", "copilot", home=tmp_path)
    data = settings(root / PROJECT_FILES["copilot"])
    assert data["hooks"]["postToolUse"] == [
        {
            "type": "command",
            "bash": "greenloop hook post-tool --host copilot",
            "matcher": "bash",
            "timeoutSec": 60,
        }
    ]
    listed = greenloop(root, "install", "--list", home=tmp_path).stdout
    assert "installed: agentStop, Stop, postToolUse" in listed


def test_install_for_copilot_without_tool_output_writes_the_stop_hook_only(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_repo({"README.md": "x\n"})
    greenloop(root, "install", "copilot", "--no-tool-output", home=tmp_path)
    assert set(settings(root / PROJECT_FILES["copilot"])["hooks"]) == {"agentStop", "Stop"}


def test_install_gives_gemini_its_timeout_in_milliseconds_and_the_shell_output_hook(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_repo({"README.md": "x\n"})
    greenloop(root, "install", "gemini", home=tmp_path)
    data = settings(root / PROJECT_FILES["gemini"])
    assert stop_handlers("gemini", data)[0]["timeout"] == 600_000
    assert data["hooks"]["AfterTool"] == [
        {
            "matcher": "run_shell_command",
            "hooks": [
                {
                    "name": "greenloop-tool-output",
                    "type": "command",
                    "command": "greenloop hook post-tool --host gemini",
                    "timeout": 60_000,
                }
            ],
        }
    ]


def test_install_without_tool_output_writes_the_stop_hook_only(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_repo({"README.md": "x\n"})
    greenloop(root, "install", "claude", "--no-tool-output", home=tmp_path)
    assert settings(root / PROJECT_FILES["claude"]) == {"hooks": {"Stop": [{"hooks": [OURS]}]}}


def test_install_caps_cursors_follow_ups_at_max_iters(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_repo({"pyproject.toml": "[tool.greenloop]\nmax_iters = 3\n"})
    greenloop(root, "install", "cursor", home=tmp_path)
    [ours] = stop_handlers("cursor", settings(root / PROJECT_FILES["cursor"]))
    assert ours["loop_limit"] == 3


def test_install_updates_an_old_claude_stop_entry_in_place(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    before = {"hooks": {"Stop": [{"hooks": [LEGACY]}]}}
    root = make_repo({".claude/settings.json": json.dumps(before)})
    out = greenloop(root, "install", "claude", "--no-tool-output", home=tmp_path)
    assert "updated" in out.stdout
    assert settings(root / ".claude" / "settings.json") == {"hooks": {"Stop": [{"hooks": [OURS]}]}}


@pytest.mark.parametrize(
    ("host", "content"),
    [("gemini", "{\n  // comments are not JSON\n}\n"), ("cursor", "[1, 2]"), ("codex", "{")],
)
def test_install_refuses_a_malformed_file_and_changes_nothing(
    host: str, content: str, make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_repo({PROJECT_FILES[host]: content})
    out = greenloop(root, "install", host, home=tmp_path)
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "nothing was changed" in out.stderr
    assert (root / PROJECT_FILES[host]).read_text() == content
    assert not (tmp_path / "state").exists()  # no backup of a file it did not touch


def test_install_refuses_another_tools_copilot_hook_file(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    theirs = '{"version": 1, "hooks": {"agentStop": [{"type": "command", "bash": "./x.sh"}]}}'
    root = make_repo({PROJECT_FILES["copilot"]: theirs})
    out = greenloop(root, "install", "copilot", home=tmp_path)
    assert out.returncode == 2
    assert "not greenloop's" in out.stderr
    assert (root / PROJECT_FILES["copilot"]).read_text() == theirs


def test_install_refuses_a_settings_file_that_is_a_link_to_a_dotfiles_repo(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    dotfiles = tmp_path / "dotfiles" / "settings.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text('{"model": "opus"}')
    root = make_repo({"README.md": "x\n"})
    (root / ".claude").mkdir()
    (root / ".claude" / "settings.json").symlink_to(dotfiles)
    out = greenloop(root, "install", "claude", home=tmp_path)
    assert out.returncode == 2
    assert "symbolic link" in out.stderr
    assert (root / ".claude" / "settings.json").is_symlink()
    assert dotfiles.read_text() == '{"model": "opus"}'


def test_install_of_an_unknown_host_says_which_exist(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_repo({"README.md": "x\n"})
    out = greenloop(root, "install", "windsurf", home=tmp_path)
    assert out.returncode == 2
    assert "unknown host 'windsurf'" in out.stderr
    assert "claude, codex, gemini, copilot, cursor, openhands" in out.stderr


def test_install_list_shows_what_is_installed_where(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_repo({".cursor/hooks.json": "{ broken"})
    greenloop(root, "install", "gemini", home=tmp_path)
    greenloop(root, "install", "codex", "--global", home=tmp_path)
    out = greenloop(root, "install", "--list", home=tmp_path)
    assert out.returncode == 0, out.stderr
    lines = {" ".join(line.split()[:2]): line for line in out.stdout.splitlines()}
    assert "installed: AfterAgent, AfterTool" in lines["gemini project"]
    assert "installed: Stop" in lines["codex global"]
    assert "unreadable" in lines["cursor project"]
    assert "no file" in lines["claude project"]


def test_install_for_codex_refuses_a_config_toml_that_is_not_toml(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_repo({".codex/config.toml": "model = \n"})
    out = greenloop(root, "install", "codex", home=tmp_path)
    assert out.returncode == 2
    assert "config.toml" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert not (root / ".codex" / "hooks.json").exists()


def test_install_for_codex_warns_when_its_hooks_are_turned_off(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "config.toml").write_text("[features]\nhooks = false\n")
    root = make_repo({"README.md": "x\n"})
    out = greenloop(root, "install", "codex", home=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "turns Codex's hooks off" in out.stdout


def test_uninstall_removes_the_pre_tool_use_wrap_the_user_added_and_gives_the_bytes_back(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    original = '{\n  "model": "opus"\n}\n'
    root = make_repo({".claude/settings.json": original})
    path = root / ".claude" / "settings.json"
    assert greenloop(root, "install", "claude", home=tmp_path).returncode == 0
    data = settings(path)  # the documented opt-in wrap, added by hand beside install's entries
    data["hooks"]["PreToolUse"] = [{"matcher": "Bash", "hooks": [TOOL]}]
    path.write_text(json.dumps(data, indent=2))
    out = greenloop(root, "uninstall", "claude", home=tmp_path)
    assert out.returncode == 0, out.stderr
    assert path.read_text() == original  # untouched otherwise: its very bytes


def test_uninstall_leaves_no_entry_that_runs_greenloop_under_any_event(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    before = {
        "hooks": {
            e: [{"matcher": "Bash", "hooks": [THEIRS, TOOL]}]
            for e in ("PreToolUse", "SubagentStop")
        }
    }
    root = make_repo({".claude/settings.json": json.dumps(before)})
    assert greenloop(root, "uninstall", "claude", home=tmp_path).returncode == 0
    after = settings(root / ".claude" / "settings.json")
    assert "greenloop" not in json.dumps(after)
    assert after["hooks"]["PreToolUse"] == [{"matcher": "Bash", "hooks": [THEIRS]}]


def test_install_for_copilot_gives_vs_code_a_stop_entry_it_reads_from_the_same_file(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    # VS Code loads every *.json of .github/hooks, turns lowerCamelCase events into PascalCase
    # (agentStop becomes an AgentStop it never fires) and counts `timeout` (default 30 s)
    config = "[tool.greenloop]\ntimeout = 900\n"
    root = make_repo({"pyproject.toml": config})
    greenloop(root, "install", "copilot", home=tmp_path)
    data = settings(root / PROJECT_FILES["copilot"])
    assert data["hooks"]["Stop"] == [
        {"type": "command", "bash": "greenloop hook stop", "timeout": 900, "timeoutSec": 900}
    ]
    out = greenloop(root, "uninstall", "copilot", home=tmp_path)
    assert "as it was before install" in out.stdout
    assert not (root / PROJECT_FILES["copilot"]).exists()


def test_install_for_openhands_writes_a_stop_group_the_sdk_loader_reads(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_repo({"README.md": "x\n"})
    out = greenloop(root, "install", "openhands", home=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "HookConfig.load" in out.stdout  # the SDK reads it only when handed the file
    data = settings(root / PROJECT_FILES["openhands"])
    assert data == {
        "hooks": {
            "Stop": [
                {
                    "hooks": [
                        {
                            "type": "command",
                            "command": "greenloop hook stop --host openhands",
                            "timeout": 600,
                        }
                    ]
                }
            ]
        }
    }


def test_install_for_opencode_writes_its_plugin_and_uninstall_leaves_no_trace(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_repo({"README.md": "x\n"})
    plugin = root / ".opencode" / "plugin" / "greenloop.js"
    out = greenloop(root, "install", "opencode", home=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "no stop gate" in out.stdout
    text = plugin.read_text()
    assert '"tool.execute.after"' in text
    assert 'const COMMAND = "greenloop hook post-tool --host opencode";' in text
    assert "already" in greenloop(root, "install", "opencode", home=tmp_path).stdout
    assert "installed: plugin" in greenloop(root, "install", "--list", home=tmp_path).stdout
    out = greenloop(root, "uninstall", "opencode", home=tmp_path)
    assert "as it was before install" in out.stdout
    assert not (root / ".opencode").exists()  # the folders install made went with it


def test_install_for_opencode_refuses_a_plugin_file_that_is_not_greenloops(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    theirs = "export const Mine = async () => ({});\n"
    root = make_repo({".opencode/plugin/greenloop.js": theirs})
    out = greenloop(root, "install", "opencode", home=tmp_path)
    assert out.returncode == 2
    assert "not greenloop's" in out.stderr
    assert (root / ".opencode" / "plugin" / "greenloop.js").read_text() == theirs
    assert "no greenloop hooks" in greenloop(root, "uninstall", "opencode", home=tmp_path).stdout


def test_global_install_for_opencode_writes_the_users_plugin_folder(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_repo({"README.md": "x\n"})
    home = tmp_path / "home"
    out = subprocess.run(
        [PY, "-m", "greenloop", "-C", str(root), "install", "opencode", "--global"],
        check=False, capture_output=True, text=True, timeout=hang(60),
        env={**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / "cfg"),
             "XDG_STATE_HOME": str(home / "state")},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert (home / "cfg" / "opencode" / "plugin" / "greenloop.js").is_file()
    assert not (root / ".opencode").exists()


def test_install_list_names_every_host_with_its_gates_and_how_it_was_tried(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    from greenloop.integrations import hosts, tool_hosts
    from greenloop.integrations.host_facts import HOST_FACTS
    from greenloop.integrations.install_hosts import BUILDERS

    root = make_repo({"README.md": "x\n"})
    out = greenloop(root, "install", "--list", home=tmp_path).stdout
    table = out.split("what is installed where:")[0]
    rows = {line.split()[0]: line for line in table.splitlines() if line.strip()}
    # every host the hooks answer, and every host install writes for, has its row
    for name in {*hosts.HOSTS, *tool_hosts.HOSTS, *BUILDERS}:
        row = rows[name]
        assert "real" in row or "by contract" in row, row
    for facts in HOST_FACTS:
        assert facts.stop_gate in rows[facts.name]
        assert facts.tool_output in rows[facts.name]


CALC_BUG = {
    "calc.py": "def add(a, b):\n    return a - b\n",
    "test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
    "pyproject.toml": '[[tool.greenloop.stage]]\nname = "tests"\n'
    f'run = "{PY} -m pytest -q -p no:cacheprovider"\n',
}


def run_installed(command: str, payload: dict[str, Any], cwd: Path) -> dict[str, Any]:
    """The command install wrote, run the way the host runs it (``sh -c``, the event on stdin)."""
    out = subprocess.run(
        ["sh", "-c", command], input=json.dumps(payload), cwd=cwd, capture_output=True,
        text=True, check=False, timeout=hang(120), env={**os.environ, "PATH": ON_PATH},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    reply: dict[str, Any] = json.loads(out.stdout)
    return reply


def test_install_for_goose_writes_a_plugin_whose_stop_hook_answers_gooses_payload(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_repo(CALC_BUG)
    plugin = root / ".agents" / "plugins" / "greenloop"
    assert greenloop(root, "install", "goose", home=tmp_path).returncode == 0
    assert json.loads((plugin / "plugin.json").read_text())["name"] == "greenloop"
    [group] = settings(plugin / "hooks" / "hooks.json")["hooks"]["Stop"]
    [hook] = group["hooks"]
    assert hook["command"] == "greenloop hook stop --host goose"
    # Goose's Stop payload names no directory: the hook verifies the one Goose runs it in
    reply = run_installed(hook["command"], {"event": "Stop", "session_id": "g1"}, cwd=root)
    assert reply["decision"] == "block"
    assert "test_calc.py::test_add" in reply["reason"]
    out = greenloop(root, "uninstall", "goose", home=tmp_path)
    assert "as it was before install" in out.stdout
    assert not (root / ".agents").exists()


def test_install_for_kimi_appends_a_hooks_table_and_uninstall_gives_the_bytes_back(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    import tomllib

    root = make_repo(CALC_BUG)
    config = tmp_path / ".kimi-code" / "config.toml"
    config.parent.mkdir()
    theirs = '# my settings\ndefault_model = "kimi-k2"\n\n[[hooks]]\nevent = "PreToolUse"\ncommand = "./guard.sh"\n'
    config.write_text(theirs)
    assert greenloop(root, "install", "kimi", home=tmp_path).returncode == 0
    hooks = tomllib.loads(config.read_text())["hooks"]
    assert hooks[0]["command"] == "./guard.sh"  # theirs, first and unchanged
    ours = hooks[1]
    assert set(ours) == {"event", "command", "timeout"}  # Kimi refuses any other field
    assert ours["event"] == "Stop"
    assert ours["timeout"] <= 600  # and a timeout past 600 s
    payload = {"hook_event_name": "Stop", "session_id": "k1", "cwd": str(root),
               "stop_hook_active": False}  # fmt: skip
    reply = run_installed(ours["command"], payload, cwd=root)
    assert reply["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "test_calc.py::test_add" in reply["hookSpecificOutput"]["permissionDecisionReason"]
    assert "installed: Stop" in greenloop(root, "install", "--list", home=tmp_path).stdout
    out = greenloop(root, "uninstall", "kimi", home=tmp_path)
    assert "as it was before install" in out.stdout
    assert config.read_text() == theirs


def test_install_for_kimi_refuses_a_config_that_is_not_toml(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_repo({"README.md": "x\n"})
    config = tmp_path / ".kimi-code" / "config.toml"
    config.parent.mkdir()
    config.write_text("model = \n")
    out = greenloop(root, "install", "kimi", home=tmp_path)
    assert out.returncode == 2
    assert "as TOML" in out.stderr
    assert config.read_text() == "model = \n"

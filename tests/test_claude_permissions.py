"""The PreToolUse wrap allows a verifier command only where Claude Code's own rules would have run
it as the agent wrote it (issue 36): read from real settings files, never allowing more."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from greenloop.integrations.claude_permissions import allowed_by, split_command
from greenloop.integrations.tool_output import HookAnswer, run_post_tool

PYTEST = "python -m pytest"


def user_rules(home: Path, **permissions: object) -> dict[str, str]:
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    settings = {"permissions": permissions}
    (home / ".claude" / "settings.json").write_text(json.dumps(settings))
    return {"HOME": str(home)}


def project_rules(root: Path, home: Path, *, trusted: bool, **permissions: object) -> None:
    (root / ".claude").mkdir(parents=True, exist_ok=True)
    (root / ".claude" / "settings.json").write_text(json.dumps({"permissions": permissions}))
    if trusted:
        state = {"projects": {str(root): {"hasTrustDialogAccepted": True}}}
        (home / ".claude.json").write_text(json.dumps(state))


@pytest.mark.parametrize(
    ("command", "parts"),
    [
        ("python -m pytest -q", ["python -m pytest -q"]),
        ("python -m pytest -q 2>&1 | tail -n 50", ["python -m pytest -q", "tail -n 50"]),
        ("cd sub && npm test", ["cd sub", "npm test"]),
        ("pytest -k 'a or b'", ["pytest -k 'a or b'"]),
        ("pytest $ARGS", []),
        ('pytest -k "$NAME"', []),
        ("pytest > out.txt", []),
        ("pytest $(cat args)", []),
        ("{ pytest; }", []),
        ("pytest &", []),
        ("pytest 'unclosed", []),
        ("pytest |", []),
    ],
)
def test_a_command_splits_into_its_simple_commands_or_into_nothing_where_only_a_shell_could_tell(
    command: str, parts: list[str]
) -> None:
    assert split_command(command) == parts


@pytest.mark.parametrize(
    ("allow", "command", "rule"),
    [
        (["Bash"], "python -m pytest -q", "Bash"),
        (["Bash(*)"], "python -m pytest -q", "Bash(*)"),
        ([f"Bash({PYTEST}:*)"], "python -m pytest -q -x", f"Bash({PYTEST}:*)"),
        ([f"Bash({PYTEST} *)"], "python -m pytest", f"Bash({PYTEST} *)"),
        ([f"Bash({PYTEST}:*)"], "python -m pytest -q 2>&1 | tail -n 50", f"Bash({PYTEST}:*)"),
        ([f"Bash({PYTEST})"], "python -m pytest", f"Bash({PYTEST})"),
    ],
)
def test_a_command_the_users_rules_allow_is_allowed_naming_the_rule(
    tmp_path: Path, allow: list[str], command: str, rule: str
) -> None:
    environ = user_rules(tmp_path / "home", allow=allow)
    assert allowed_by(command, tmp_path, "default", environ) == rule


@pytest.mark.parametrize(
    ("permissions", "command"),
    [
        ({}, "python -m pytest"),
        ({"allow": ["Bash(npm test:*)"]}, "python -m pytest"),
        ({"allow": [f"Bash({PYTEST}:*)"]}, "python -m pytestx"),  # a word boundary, not a prefix
        ({"allow": [f"Bash({PYTEST})"]}, "python -m pytest -q"),  # exact means exact
        ({"allow": [f"Bash({PYTEST}:*)"]}, "python -m pytest && rm -rf build"),
        ({"allow": [f"Bash({PYTEST}:*)"]}, "tail -n 5 log | python -m pytest"),
        ({"allow": ["Bash(python -m * -q)"]}, "python -m pytest -q"),  # a wildcard inside
        ({"allow": ["Bash"], "deny": ["Bash(python -m pytest:*)"]}, "python -m pytest"),
        ({"allow": ["Bash"], "ask": ["Bash(python:*)"]}, "python -m pytest"),
        ({"allow": ["Bash"], "deny": ["Bash(git push * --force)"]}, "python -m pytest"),
        ({"allow": ["Bash"]}, "python -m pytest $FLAGS"),
        ({"allow": ["Read"]}, "python -m pytest"),
    ],
)
def test_a_command_no_rule_allows_for_sure_is_not_allowed(
    tmp_path: Path, permissions: dict[str, list[str]], command: str
) -> None:
    environ = user_rules(tmp_path / "home", **permissions)
    assert allowed_by(command, tmp_path, "default", environ) == ""


def test_bypass_permissions_allows_all_but_what_a_deny_rule_reaches(tmp_path: Path) -> None:
    environ = user_rules(tmp_path / "home", deny=["Bash(cargo:*)"])
    assert allowed_by("python -m pytest", tmp_path, "bypassPermissions", environ)
    assert allowed_by("cargo test", tmp_path, "bypassPermissions", environ) == ""


def test_plan_mode_and_modes_not_known_allow_nothing(tmp_path: Path) -> None:
    environ = user_rules(tmp_path / "home", allow=["Bash"])
    assert allowed_by("python -m pytest", tmp_path, "plan", environ) == ""
    assert allowed_by("python -m pytest", tmp_path, "yolo", environ) == ""


def test_a_projects_own_rules_count_only_once_the_user_trusted_the_project(tmp_path: Path) -> None:
    home, root = tmp_path / "home", tmp_path / "proj"
    environ = user_rules(home)
    project_rules(root, home, trusted=False, allow=["Bash"])
    assert allowed_by("python -m pytest", root, "default", environ) == ""
    project_rules(root, home, trusted=True, allow=["Bash"])
    assert allowed_by("python -m pytest", root, "default", environ) == "Bash"


def test_a_deny_rule_in_the_users_settings_outweighs_the_projects_allow(tmp_path: Path) -> None:
    home, root = tmp_path / "home", tmp_path / "proj"
    environ = user_rules(home, deny=["Bash(python:*)"])
    project_rules(root, home, trusted=True, allow=["Bash"])
    assert allowed_by("python -m pytest", root, "default", environ) == ""


# ------------------------------------------------------------------ the hook's answer


def pre_tool_use(repo: Path, command: str, mode: str = "default") -> bytes:
    payload = {
        "hook_event_name": "PreToolUse",
        "permission_mode": mode,
        "cwd": str(repo),
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "tests"},
    }
    return json.dumps(payload).encode()


def installed(make_repo: Callable[..., Path], home: Path, *flags: str) -> Path:
    repo = make_repo({"test_a.py": "def test_a():\n    assert 1 == 2\n"})
    subprocess.run(
        [sys.executable, "-m", "greenloop", "install", "claude", *flags], cwd=repo,
        env={"HOME": str(home), "PATH": "/usr/bin:/bin"}, check=True, capture_output=True,
    )  # fmt: skip
    return repo


def test_the_hook_wraps_and_allows_what_the_users_rule_allows(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    environ = user_rules(tmp_path, allow=[f"Bash({PYTEST}:*)"])
    repo = installed(make_repo, tmp_path)
    answer = run_post_tool(pre_tool_use(repo, f"{PYTEST} -q"), environ=environ)
    specific = json.loads(answer.reply)["hookSpecificOutput"]
    assert specific["permissionDecision"] == "allow"
    assert specific["updatedInput"]["command"].startswith("{ python -m pytest -q\n}")
    assert specific["updatedInput"]["description"] == "tests"


def test_the_hook_leaves_a_command_no_rule_allows_to_claude_codes_own_prompt(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    environ = user_rules(tmp_path, allow=["Bash(npm test:*)"])
    repo = installed(make_repo, tmp_path)
    assert run_post_tool(pre_tool_use(repo, f"{PYTEST} -q"), environ=environ) == HookAnswer()


def test_install_wrap_always_wraps_and_leaves_the_decision_to_claude_code(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    environ = user_rules(tmp_path)
    repo = installed(make_repo, tmp_path, "--wrap")
    hooks = json.loads((repo / ".claude" / "settings.json").read_text())["hooks"]
    command = hooks["PreToolUse"][0]["hooks"][0]["command"]
    assert command.startswith("GREENLOOP_CLAUDE_WRAP=always ")
    always = {**environ, "GREENLOOP_CLAUDE_WRAP": "always"}
    specific = json.loads(run_post_tool(pre_tool_use(repo, PYTEST), environ=always).reply)
    assert "permissionDecision" not in specific["hookSpecificOutput"]
    assert specific["hookSpecificOutput"]["updatedInput"]["command"].startswith("{ ")

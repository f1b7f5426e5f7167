"""``greenloop install claude`` says which mode it set up and why (issue 36). The real Claude Code
2.1.332 refuses the wrapped command ("A group in braces ... can't be checked before it runs", and
without the braces "A variable in this command can't be checked") even where its settings allow
Bash as a whole or set bypassPermissions: only Bash allowed on its command line runs it. So the
default is the note mode, and ``--wrap`` sets up the wrap for sessions run that way."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from agent_clis import clean_environ, require_cli
from greenloop.demo.script import Reply
from greenloop.demo.server import ReplayServer
from limits import hang
from test_tool_output_e2e import (
    COMMAND,
    SHOP,
    assert_digest_of_the_red_suite,
    shop_repo,
    tool_result,
)

PY = sys.executable


def install(
    repo: Path, permissions: dict[str, object], *flags: str
) -> subprocess.CompletedProcess[str]:
    (repo / ".claude").mkdir(exist_ok=True)
    (repo / ".claude" / "settings.json").write_text(json.dumps({"permissions": permissions}))
    env = {**__import__("os").environ, "HOME": str(repo / ".home")}
    return subprocess.run(
        [PY, "-m", "greenloop", "install", "claude", *flags], cwd=repo, env=env,
        capture_output=True, text=True, timeout=hang(120), check=True,
    )  # fmt: skip


def run_claude(repo: Path, tmp_path: Path, *flags: str) -> str:
    """The real Claude Code runs the suite once; the tool result the model was sent next."""
    node_bin = require_cli("claude")
    script = [
        Reply.call("Bash", "Running the tests.", command=COMMAND, description="run the tests"),
        Reply.say("Read the results."),
    ]
    with ReplayServer(script, api="messages") as server:
        environ = clean_environ(
            tmp_path / "home", Path(sys.executable).parent, node_bin,
            ANTHROPIC_BASE_URL=server.root_url, ANTHROPIC_API_KEY="sk-ant-dummy",
            ANTHROPIC_MODEL="claude-sonnet-4-5", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_AUTOUPDATER="1",
        )  # fmt: skip
        claude = subprocess.run(
            ["claude", "-p", "--output-format", "json", *flags], cwd=repo, env=environ,
            input="Run the test suite.", capture_output=True, text=True, timeout=hang(300),
            check=False,
        )  # fmt: skip
    assert claude.returncode == 0, claude.stdout + claude.stderr
    return tool_result(server.main_requests[1]["messages"][-1]["content"])


def events(repo: Path) -> list[str]:
    return sorted(json.loads((repo / ".claude" / "settings.json").read_text())["hooks"])


def test_bash_allowed_in_settings_does_not_run_a_wrapped_command_so_the_default_is_the_note(
    tmp_path: Path, make_repo: Callable[..., Path]
) -> None:
    repo = shop_repo(make_repo, SHOP)
    done = install(repo, {"allow": ["Bash"]})
    assert "mode: note" in done.stdout
    assert '"allow": ["Bash"] in settings.json does not count' in done.stdout
    assert "PreToolUse" not in events(repo)
    # the default install, Bash allowed on the command line: the red run ran (nothing refused),
    # Claude's own cut of the output, greenloop's note on it beside
    seen = run_claude(repo, tmp_path, "--allowedTools", "Bash")
    assert "can't be checked before it runs" not in seen
    assert "requires approval" not in seen
    assert "50 failed" in seen or "FAILED" in seen


def test_install_wrap_with_bash_allowed_on_claudes_command_line_gives_the_model_the_digest(
    tmp_path: Path, make_repo: Callable[..., Path]
) -> None:
    repo = shop_repo(make_repo, SHOP)
    done = install(repo, {}, "--wrap")
    assert "mode: wrap" in done.stdout
    assert events(repo) == ["PostToolUse", "PostToolUseFailure", "PreToolUse", "Stop"]
    seen = run_claude(repo, tmp_path, "--allowedTools", "Bash")
    assert_digest_of_the_red_suite(seen)  # the digest in place of Claude's 10,000-character cut


def test_prefix_rules_get_no_wrap_and_are_told_why(make_repo: Callable[..., Path]) -> None:
    repo = make_repo({"a.py": ""})
    done = install(repo, {"allow": ["Bash(python -m pytest:*)"]})
    assert "mode: note" in done.stdout
    assert events(repo) == ["PostToolUse", "PostToolUseFailure", "Stop"]


def test_uninstall_takes_the_wrap_away_with_the_rest(make_repo: Callable[..., Path]) -> None:
    repo = make_repo({"a.py": ""})
    install(repo, {"allow": ["Bash"]}, "--wrap")
    subprocess.run(
        [PY, "-m", "greenloop", "uninstall", "claude"], cwd=repo, capture_output=True,
        text=True, timeout=hang(120), check=True,
    )  # fmt: skip
    left = json.loads((repo / ".claude" / "settings.json").read_text())
    assert "hooks" not in left or not left["hooks"]
    assert left["permissions"] == {"allow": ["Bash"]}

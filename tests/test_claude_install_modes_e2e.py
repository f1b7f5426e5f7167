"""``greenloop install claude`` says which mode it set up and why (issue 36), driven with the real
Claude Code 2.1.332. A failing Bash call reaches ``PostToolUseFailure``, where the output cannot be
replaced; so on PreToolUse the hook wraps a verifier command to exit 0 with its code on a last line.
Claude Code checks permissions on the wrapped command (a prefix rule does not match it; a group in
braces is refused), so the hook allows it (``permissionDecision``) where the user's own rules would
have run the command as written, and leaves any other to Claude Code's prompt. A project's own
settings count only in a project the user trusted (``claude -p`` ignores them elsewhere)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from agent_clis import clean_environ, require_cli
from greenloop.demo.script import Reply
from greenloop.demo.server import ReplayServer
from greenloop.digest import estimate_tokens
from limits import hang
from test_tool_output_e2e import (
    COMMAND,
    FIXED,
    SHOP,
    TESTS,
    assert_digest_of_the_red_suite,
    shop_repo,
    tool_result,
)

PY = sys.executable


def install(
    repo: Path, permissions: dict[str, object], *flags: str, trusted: bool = True
) -> subprocess.CompletedProcess[str]:
    (repo / ".claude").mkdir(exist_ok=True)
    (repo / ".claude" / "settings.json").write_text(json.dumps({"permissions": permissions}))
    home = repo.parent / "home"  # the HOME run_claude gives Claude Code
    home.mkdir(exist_ok=True)
    if trusted:  # as Claude Code records the user's yes to its trust dialog
        state = {"projects": {str(repo): {"hasTrustDialogAccepted": True}}}
        (home / ".claude.json").write_text(json.dumps(state))
    env = {**__import__("os").environ, "HOME": str(home)}
    return subprocess.run(
        [PY, "-m", "greenloop", "install", "claude", *flags], cwd=repo, env=env,
        capture_output=True, text=True, timeout=hang(120), check=True,
    )  # fmt: skip


def run_claude(repo: Path, *flags: str) -> str:
    """The real Claude Code runs the suite once; the tool result the model was sent next."""
    node_bin = require_cli("claude")
    script = [
        Reply.call("Bash", "Running the tests.", command=COMMAND, description="run the tests"),
        Reply.say("Read the results."),
    ]
    with ReplayServer(script, api="messages") as server:
        environ = clean_environ(
            repo.parent / "home", Path(sys.executable).parent, node_bin,
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


EVERY = ["PostToolUse", "PostToolUseFailure", "PreToolUse", "Stop"]


def test_bash_allowed_in_the_projects_settings_gets_the_failing_runs_digest_in_place(
    make_repo: Callable[..., Path],
) -> None:
    repo = shop_repo(make_repo, SHOP)
    done = install(repo, {"allow": ["Bash"]})
    assert "mode: wrap where your rules allow" in done.stdout
    assert "Bash rules found: Bash" in done.stdout
    assert events(repo) == EVERY
    seen = run_claude(repo)  # the default install, no flag on Claude's command line
    assert_digest_of_the_red_suite(seen)  # the digest in place of Claude's 10,000-character cut


def test_a_green_run_under_the_default_install_is_one_short_line(
    make_repo: Callable[..., Path],
) -> None:
    repo = shop_repo(make_repo, FIXED)
    install(repo, {"allow": ["Bash"]})
    seen = run_claude(repo)
    assert estimate_tokens(seen) <= 60, seen
    assert seen.startswith(f"greenloop: green: {TESTS} passed"), seen


def test_a_prefix_rule_for_the_test_command_still_runs_the_tests_and_gets_the_digest(
    make_repo: Callable[..., Path],
) -> None:
    repo = shop_repo(make_repo, SHOP)
    prefix = COMMAND.split(" -p ")[0]  # "<python> -m pytest"
    install(repo, {"allow": [f"Bash({prefix}:*)"]})
    seen = run_claude(repo)
    assert "requires approval" not in seen
    assert_digest_of_the_red_suite(seen)


def test_a_command_no_rule_allows_is_never_allowed_by_greenloop(
    make_repo: Callable[..., Path],
) -> None:
    repo = shop_repo(make_repo, SHOP)
    install(repo, {"allow": ["Bash(npm test:*)"]})
    seen = run_claude(repo)  # claude -p: what would prompt is refused, as without greenloop
    assert "requires approval" in seen
    assert "passed" not in seen  # the suite did not run
    assert "failed" not in seen


def test_an_untrusted_projects_own_rules_allow_nothing(make_repo: Callable[..., Path]) -> None:
    repo = shop_repo(make_repo, SHOP)
    done = install(repo, {"allow": ["Bash"]}, trusted=False)
    assert "not trusted in Claude Code yet" in done.stdout
    seen = run_claude(repo)  # Claude Code ignores those rules here: so does greenloop
    assert "requires approval" in seen


def test_install_wrap_with_bash_allowed_on_claudes_command_line_gives_the_model_the_digest(
    make_repo: Callable[..., Path],
) -> None:
    repo = shop_repo(make_repo, SHOP)
    done = install(repo, {}, "--wrap")
    assert "mode: wrap, always" in done.stdout
    assert events(repo) == EVERY
    seen = run_claude(repo, "--allowedTools", "Bash")
    assert_digest_of_the_red_suite(seen)


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

"""The Stop hook end to end with the real Claude Code CLI.

``greenloop install claude`` in a repo whose test fails; ``claude -p`` against a scripted
Messages-API server on 127.0.0.1 stops at once, the hook blocks with the digest, Claude's
next request carries it, the scripted model fixes the bug, and the hook allows the stop
on the green suite.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agent_clis import clean_environ, require_cli
from greenloop.demo.script import Reply
from greenloop.demo.server import ReplayServer
from limits import hang

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
PYPROJECT = (
    '[[tool.greenloop.stage]]\nname = "tests"\nrun = "{python} -m pytest -q -p no:cacheprovider"\n'
)


def last_user_text(request: Mapping[str, Any]) -> str:
    """The text of the last user message of a Messages API request."""
    users = [m for m in request.get("messages", []) if m.get("role") == "user"]
    if not users:
        return ""
    content = users[-1]["content"]
    if isinstance(content, str):
        return content
    return "\n".join(block.get("text", "") for block in content if isinstance(block, dict))


def test_claude_stop_hook_blocks_with_the_digest_then_allows_the_stop_once_green(
    tmp_path: Path, make_repo: Callable[..., Path]
) -> None:
    node_bin = require_cli("claude")
    repo = make_repo(
        {
            "calc.py": BUGGY,
            "test_calc.py": TEST,
            "pyproject.toml": PYPROJECT.format(python=sys.executable),
        }
    )
    target = str(repo / "calc.py")
    script = [
        Reply.say("All done."),  # stops with the test still failing
        Reply.call("Read", "The hook says test_add fails; reading calc.py.", file_path=target),
        Reply.call("Edit", file_path=target, old_string="a - b", new_string="a + b"),
        Reply.say("Fixed add()."),
    ]
    with ReplayServer(script, api="messages") as server:
        # the hook runs `greenloop hook claude-stop`: this interpreter's bin dir comes first
        environ = clean_environ(
            tmp_path / "home",
            Path(sys.executable).parent,
            node_bin,
            ANTHROPIC_BASE_URL=server.root_url,
            ANTHROPIC_API_KEY="sk-ant-dummy",
            ANTHROPIC_MODEL="claude-sonnet-4-5",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_AUTOUPDATER="1",
        )
        install = subprocess.run(
            [sys.executable, "-m", "greenloop", "install", "claude"],
            cwd=repo,
            env=environ,
            capture_output=True,
            text=True,
            check=False,
        )
        assert install.returncode == 0, install.stderr
        claude = subprocess.run(
            ["claude", "-p", "--output-format", "json", "--permission-mode", "acceptEdits"],
            cwd=repo,
            env=environ,
            input="Make the tests pass.",
            capture_output=True,
            text=True,
            timeout=hang(300),
            check=False,
        )
    assert claude.returncode == 0, claude.stdout + claude.stderr
    assert (repo / "calc.py").read_text() == FIXED
    requests = server.main_requests
    assert len(requests) == 4, [last_user_text(r)[:200] for r in requests]
    assert "Stop hook feedback" not in last_user_text(requests[0])
    feedback = last_user_text(requests[1])
    assert "Stop hook feedback" in feedback
    assert "test_calc.py::test_add" in feedback
    # the final stop, on a green suite, was allowed: no fifth request, the last answer stands
    assert json.loads(claude.stdout)["result"] == "Fixed add()."


def test_the_next_turns_stop_on_the_same_green_tree_replays_the_memo_with_the_real_cli(
    tmp_path: Path, make_repo: Callable[..., Path]
) -> None:
    """Claude Code sends ``last_assistant_message`` and ``prompt_id`` new on every turn: three
    turns of one session (``--continue``) on a green tree. The first stop verifies, the second
    finds the cached run and leaves a memo, the third is answered from the memo (the memo is not
    written again); the model receives nothing from greenloop on any of them."""
    node_bin = require_cli("claude")
    repo = make_repo(
        {
            "calc.py": FIXED,
            "test_calc.py": TEST,
            "pyproject.toml": PYPROJECT.format(python=sys.executable),
        }
    )
    home = tmp_path / "home"
    script = [Reply.say("Turn one."), Reply.say("Turn two."), Reply.say("Turn three.")]
    with ReplayServer(script, api="messages") as server:
        environ = clean_environ(
            home,
            Path(sys.executable).parent,
            node_bin,
            ANTHROPIC_BASE_URL=server.root_url,
            ANTHROPIC_API_KEY="sk-ant-dummy",
            ANTHROPIC_MODEL="claude-sonnet-4-5",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_AUTOUPDATER="1",
        )
        install = subprocess.run(
            [sys.executable, "-m", "greenloop", "install", "claude"],
            cwd=repo,
            env=environ,
            capture_output=True,
            text=True,
            check=False,
        )
        assert install.returncode == 0, install.stderr
        memos = home / ".cache" / "greenloop" / "hook-hits"
        seen: list[dict[str, int]] = []
        for turn in range(3):
            more = ["--continue"] if turn else []
            claude = subprocess.run(
                ["claude", "-p", *more, "--output-format", "json"],
                cwd=repo,
                env=environ,
                input=f"Turn {turn + 1}.",
                capture_output=True,
                text=True,
                timeout=hang(300),
                check=False,
            )
            assert claude.returncode == 0, claude.stdout + claude.stderr
            found = sorted(memos.glob("*.json")) if memos.exists() else []
            seen.append({p.name: p.stat().st_mtime_ns for p in found})
    requests = server.main_requests
    assert len(requests) == 3  # one per turn: no stop was blocked
    assert not any("Stop hook feedback" in last_user_text(r) for r in requests)
    assert seen[0] == {}  # the first stop verified: no cached run to replay yet
    assert len(seen[1]) == 1  # the second found the cached run and left its memo
    assert seen[2] == seen[1]  # the third was answered from it: not written again

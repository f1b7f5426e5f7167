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

"""``greenloop install opencode`` inside the real OpenCode CLI: the agent's own pytest run, digested.

OpenCode (opencode-ai, pinned in scripts/install_agent_clis.sh) has no hook command: install writes
a plugin, ``.opencode/plugin/greenloop.js``, whose ``tool.execute.after`` hands each ``bash`` call's
output to ``greenloop hook post-tool --host opencode`` and puts the answer where the model reads the
output. ``opencode run`` drives its own agent against the scripted model server on 127.0.0.1
(OpenAI chat completions, a provider of its own configuration); what the model reads is the tool
message of the next request. Without the plugin the model reads the raw output (recorded here
too, for the docs); OpenCode has no stop gate.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_clis import clean_environ, require_cli
from greenloop.demo.script import Reply
from greenloop.demo.server import ReplayServer
from greenloop.digest import estimate_tokens
from limits import hang
from test_tool_output_e2e import COMMAND, FAILING, FIXED, SHOP, TESTS, shop_repo


def config(base_url: str) -> dict[str, Any]:
    """OpenCode's own configuration: the scripted server as its only provider, no updates."""
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "Replay",
        "options": {"baseURL": base_url, "apiKey": "sk-dummy"},
        "models": {"replay-model": {"name": "Replay", "tool_call": True}},
    }
    return {
        "provider": {"replay": provider},
        "model": "replay/replay-model",
        "small_model": "replay/replay-model",  # the title request: else OpenCode's own service
        "enabled_providers": ["replay"],
        "autoupdate": False,
        "share": "disabled",
        "permission": {"bash": "allow", "edit": "allow"},
    }


def greenloop(repo: Path, home: Path, *args: str) -> str:
    environ = clean_environ(home, Path(sys.executable).parent, XDG_STATE_HOME=str(home / "state"))
    out = subprocess.run(
        [sys.executable, "-m", "greenloop", *args],
        cwd=repo, env=environ, capture_output=True, text=True, check=False, timeout=hang(60),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return out.stdout


def run_opencode(repo: Path, home: Path) -> str:
    """OpenCode's agent runs the suite once through its bash tool; what the model read of it."""
    environ = clean_environ(
        home,
        Path(sys.executable).parent,  # the plugin runs `greenloop`: this installation first
        require_cli("opencode"),
        PWD=str(repo),  # OpenCode takes its project from PWD, not from its working directory
        OPENCODE_DISABLE_AUTOUPDATE="1",
        OPENCODE_DISABLE_MODELS_FETCH="1",
        OPENCODE_DISABLE_LSP_DOWNLOAD="true",
        OPENCODE_DISABLE_DEFAULT_PLUGINS="1",
    )
    script = [Reply.call("bash", command=COMMAND, description="Run the tests"), Reply.say("Read.")]
    # the title request carries no tools: a side request, it does not consume the script
    with ReplayServer(script, api="chat", is_side=lambda body: not body.get("tools")) as server:
        folder = home / ".config" / "opencode"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "opencode.json").write_text(json.dumps(config(server.base_url)))
        out = subprocess.run(
            ["opencode", "run", "--format", "json", "Run the test suite."],
            cwd=repo, env=environ, capture_output=True, text=True, check=False,
            timeout=hang(600),
        )  # fmt: skip
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
        assert server.remaining == 0, out.stdout[-2000:]
        messages = server.main_requests[1]["messages"]
    [result] = [m for m in messages if m.get("role") == "tool"]
    content = result["content"]
    return content if isinstance(content, str) else json.dumps(content)


def test_opencode_sends_the_model_greenloops_digest_of_its_own_failing_run(
    tmp_path: Path, make_repo: Callable[..., Path]
) -> None:
    repo = shop_repo(make_repo, SHOP)
    home = tmp_path / "home"
    greenloop(repo, home, "install", "opencode")
    seen = run_opencode(repo, home)
    assert estimate_tokens(seen) <= 2000, seen
    assert f"{FAILING} failed" in seen
    assert "tests/test_shop.py::test_price_0" in seen  # the first failure's id
    assert "ValueError: no price for a batch of 0" in seen  # its message
    assert "at src/shop/__init__.py:3" in seen  # the project frame that raised


def test_opencode_sends_one_line_for_its_own_green_run(
    tmp_path: Path, make_repo: Callable[..., Path]
) -> None:
    repo = shop_repo(make_repo, FIXED)
    home = tmp_path / "home"
    greenloop(repo, home, "install", "opencode")
    seen = run_opencode(repo, home)
    assert estimate_tokens(seen) <= 60, seen
    assert seen.startswith(f"greenloop: green: {TESTS} passed"), seen


def test_without_the_plugin_opencode_hands_the_model_the_raw_failing_output(
    tmp_path: Path, make_repo: Callable[..., Path]
) -> None:
    # what docs/integrations.md records: OpenCode's own cut of a 40 KB pytest output
    repo = shop_repo(make_repo, SHOP)
    seen = run_opencode(repo, tmp_path / "home")
    print(f"raw: {len(seen)} characters, {estimate_tokens(seen)} tokens")
    assert estimate_tokens(seen) > 2000
    assert "greenloop" not in seen
    assert f"{FAILING} failed, {TESTS - FAILING} passed" in seen

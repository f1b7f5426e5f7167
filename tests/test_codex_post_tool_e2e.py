"""``greenloop hook post-tool`` inside the real Codex CLI: the agent's own pytest run, digested.

Codex CLI (0.171) runs the suite through its shell tool (``exec_command``) against the scripted model
server on 127.0.0.1, with the ``PostToolUse`` entry ``greenloop install codex`` writes. Its payload
(recorded from this CLI): ``tool_name: "Bash"``, ``tool_input.command``, ``turn_id`` and
``tool_response``, the output as a string with no exit code, cut by Codex to its head and tail past
about 10,000 characters under ``Warning: truncated output (original token count: N)``. The reply
``{"decision": "block", "reason": R}`` makes R exactly the tool output the model reads next.
"""

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
from greenloop.integrations.install_hosts import Settings, target
from limits import hang
from test_stop_hook_e2e import CODEX_CONFIG
from test_tool_output_e2e import FAILING, FIXED, SHOP, TESTS, shop_repo

COMMAND = f"{sys.executable} -m pytest -p no:cacheprovider"


def run_codex(repo: Path, tmp_path: Path) -> tuple[str, str]:
    """Codex runs the suite once; (what the model read as the tool's output, what Codex would
    have shown it without the hook: its own cut, as the hook received it)."""
    home = tmp_path / "home"
    spec = target("codex", repo, global_=False, settings=Settings(base="greenloop"), environ={})
    [entry] = [e for e in spec.entries if e.event == "PostToolUse"]
    spec.path.parent.mkdir(parents=True)
    group = {"matcher": entry.matcher, "hooks": [dict(entry.hook)]}
    spec.path.write_text(json.dumps({"hooks": {entry.event: [group]}}))
    # yield_time_ms: a call still running past its yield (10 s) returns a session, not a result
    call = Reply.call("exec_command", cmd=COMMAND, yield_time_ms=300_000)
    environ = clean_environ(
        home,
        Path(sys.executable).parent,
        require_cli("codex"),
        REPLAY_API_KEY="sk-dummy",
        CODEX_HOME=str(home / ".codex"),
    )
    (home / ".codex").mkdir()
    with ReplayServer([call, Reply.say("Read the results.")], api="responses") as server:
        config = CODEX_CONFIG.format(base_url=server.base_url, repo=repo)
        (home / ".codex" / "config.toml").write_text(config)
        codex = subprocess.run(
            ["codex", "exec", "-c", "sandbox_mode=workspace-write", "-c", "approval_policy=never",
             "--dangerously-bypass-hook-trust", "-"],
            cwd=repo, env=environ, input="Run the test suite.", capture_output=True, text=True,
            timeout=hang(600), check=False,
        )  # fmt: skip
    assert codex.returncode == 0, codex.stdout + codex.stderr
    assert "hook: PostToolUse Blocked" in codex.stderr + codex.stdout
    [result] = [i for i in server.main_requests[1]["input"] if i["type"] == "function_call_output"]
    return str(result["output"]), codex.stdout + codex.stderr


def test_codex_sends_the_model_greenloops_digest_of_its_own_failing_run(
    tmp_path: Path, make_repo: Callable[..., Path]
) -> None:
    repo = shop_repo(make_repo, SHOP)
    seen, _ = run_codex(repo, tmp_path)
    assert estimate_tokens(seen) <= 2000, seen
    # Codex hands the hook its own cut of the 40 KB output: said, and no count made up
    assert seen.startswith("greenloop: not the whole output (Codex passed on only the head"), seen
    assert f"The runner's summary, in the part shown: {FAILING} failed, {TESTS - FAILING}" in seen
    assert "First failure in the part shown: tests/test_shop.py::test_price_0" in seen
    assert "ValueError: no price for a batch of 0" in seen  # its message
    assert "at src/shop/__init__.py:3" in seen  # the project frame that raised
    assert "truncated output" not in seen  # Codex's own cut is gone


def test_codex_sends_one_line_for_its_own_green_run(
    tmp_path: Path, make_repo: Callable[..., Path]
) -> None:
    repo = shop_repo(make_repo, FIXED)
    seen, _ = run_codex(repo, tmp_path)
    assert estimate_tokens(seen) <= 60, seen
    assert seen.startswith(f"greenloop: green: {TESTS} passed"), seen
    assert "\n" not in seen.strip()

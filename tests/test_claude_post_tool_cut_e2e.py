"""The real Claude Code with ``greenloop install claude``'s entries and no PreToolUse wrap: a failing
Bash call reaches ``PostToolUseFailure``, whose ``error`` Claude Code 2.1.332 cuts to its first and
last 5,000 characters. What the model reads next (recorded by the scripted model server on
127.0.0.1): Claude's own cut, then greenloop's context saying it is a cut, the runner's own summary
from its tail and the first failure under the id pytest printed; no count or id made up."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from agent_clis import clean_environ, require_cli
from greenloop.demo.script import Reply
from greenloop.demo.server import ReplayServer
from greenloop.integrations.install_hosts import Settings, target
from limits import hang
from test_tool_output_e2e import COMMAND, FAILING, SHOP, TESTS, shop_repo


def run_claude_default(repo: Path, tmp_path: Path) -> str:
    spec = target("claude", repo, global_=False, settings=Settings(base="greenloop"), environ={})
    hooks: dict[str, list[object]] = {}
    for entry in spec.entries:
        if entry.event != "Stop":  # the scripted agent stops at once: no verify loop here
            hooks.setdefault(entry.event, []).append(
                {"matcher": entry.matcher, "hooks": [dict(entry.hook)]}
            )
    spec.path.parent.mkdir(parents=True)
    spec.path.write_text(json.dumps({"hooks": hooks}))
    script = [
        Reply.call("Bash", "Running the tests.", command=COMMAND, description="run the tests"),
        Reply.say("Read the results."),
    ]
    with ReplayServer(script, api="messages") as server:
        environ = clean_environ(
            tmp_path / "home",
            Path(sys.executable).parent,
            require_cli("claude"),
            ANTHROPIC_BASE_URL=server.root_url,
            ANTHROPIC_API_KEY="sk-ant-dummy",
            ANTHROPIC_MODEL="claude-sonnet-4-5",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_AUTOUPDATER="1",
        )
        claude = subprocess.run(
            ["claude", "-p", "--output-format", "json", "--allowedTools", "Bash"],
            cwd=repo, env=environ, input="Run the test suite.", capture_output=True, text=True,
            timeout=hang(300), check=False,
        )  # fmt: skip
    assert claude.returncode == 0, claude.stdout + claude.stderr
    return json.dumps(server.main_requests[1]["messages"][-1]["content"])


def test_claude_codes_cut_of_a_failing_run_gets_a_note_that_says_so_and_invents_nothing(
    tmp_path: Path, make_repo: Callable[..., Path]
) -> None:
    repo = shop_repo(make_repo, SHOP)
    # the raw block: greenloop's context rides in a <system-reminder> after Claude's own cut
    [block] = [
        b for b in json.loads(run_claude_default(repo, tmp_path)) if b["type"] == "tool_result"
    ]
    text = str(block["content"])
    assert block["is_error"] is True
    assert "characters truncated] ..." in text  # Claude Code's own cut reached the model
    part, note = text.split("greenloop: not the whole output", 1)
    note = "greenloop: not the whole output" + note
    assert note.startswith("greenloop: not the whole output (Claude Code passed on only the head")
    summary = f"{FAILING} failed, {TESTS - FAILING} passed"
    # the note tells what the part the model got proves: pytest's closing line where the part
    # holds it, else that no count comes from a part (inside the full suite, twice, the part
    # Claude passed on did not hold it; alone it always did)
    if summary in part:
        assert f"The runner's summary, in the part shown: {summary}" in note, part[-600:]
    else:
        assert "No count from a part." in note, part[-600:]
    assert "First failure in the part shown: tests/test_shop.py::test_price_0" in note
    assert "ValueError: no price for a batch of 0" in note
    assert "at src/shop/__init__.py:3" in note
    assert "ended early" not in note
    assert "FIRST FAILING TEST" not in note

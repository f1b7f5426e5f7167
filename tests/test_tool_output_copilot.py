"""``greenloop hook post-tool`` on GitHub Copilot CLI: real pytest runs in tmp repos, fed in the
payload shapes Copilot CLI 1.0.102 sends (recorded from the real CLI, see
tests/test_tool_output_e2e.py, which drives it)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from greenloop.digest import estimate_tokens
from greenloop.integrations.tool_gate import nothing_to_do
from greenloop.integrations.tool_hosts import wrap
from greenloop.integrations.tool_output import HookAnswer, run_post_tool
from limits import hang
from test_tool_output import CALC, FIXED, PYTEST, TESTS, pytest_output

ENV: dict[str, str] = {}
STILL_RUNNING = (
    "<command with shellId: 0 is still running after 30 seconds. The command is still running. "
    "You will be automatically notified when it completes; if you need the command to complete "
    "end your response with no tool calls to wait for the notification. Use stop_bash to stop it.>"
)


def copilot_post(repo: Path, command: str, text: str, *, tool: str = "bash") -> bytes:
    """Copilot CLI's own postToolUse payload (no event name; camelCase)."""
    payload = {
        "sessionId": "s",
        "timestamp": 1796457775296,
        "cwd": str(repo),
        "toolName": tool,
        "toolArgs": {"command": command, "description": "run the tests"},
        "toolResult": {"resultType": "success", "textResultForLlm": text},
    }
    return json.dumps(payload).encode()


def claude_format_post(repo: Path, command: str, text: str) -> bytes:
    """What Copilot CLI sends a Claude-format PostToolUse hook (``.claude/settings.json``)."""
    payload = {
        "hook_event_name": "PostToolUse",
        "session_id": "s",
        "timestamp": "2026-12-05T08:11:31.225Z",
        "cwd": str(repo),
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "run"},
        "tool_result": {"result_type": "success", "text_result_for_llm": text},
    }
    return json.dumps(payload).encode()


def completed(output: str, exit_code: int) -> str:
    """The shell tool's text: the merged output, then the line that gives the exit code."""
    return f"{output}\n<shellId: 0 completed with exit code {exit_code}>"


def saved_to_file(path: Path, output: str, exit_code: int) -> str:
    """A long output: Copilot saves it to a file and gives the model a 500-character preview."""
    path.write_text(output)
    kb = len(output.encode()) / 1024
    return completed(
        f"Output too large to read at once ({kb:.1f} KB). Saved to: {path}\nConsider using "
        "tools like grep (for searching), head/tail (for viewing start/end), view with view_range "
        "(for specific sections), or jq (for JSON) to examine portions of the output.\n\n"
        f"Preview (first 500 chars):\n{output[:500]}",
        exit_code,
    )


def modified(answer: HookAnswer) -> dict[str, Any]:
    assert answer.exit_code == 0, answer.message
    result: dict[str, Any] = json.loads(answer.reply)["modifiedResult"]
    return result


@pytest.fixture
def calc_repo(make_repo: Callable[..., Path]) -> Path:
    return make_repo({"calc.py": CALC, "test_calc.py": TESTS})


def test_a_failing_run_is_replaced_by_its_digest_through_modified_result(
    calc_repo: Path,
) -> None:
    output, code = pytest_output(calc_repo)
    assert code == 1
    payload = copilot_post(calc_repo, PYTEST, completed(output, code))
    result = modified(run_post_tool(payload, host="copilot", environ=ENV))
    assert result["resultType"] == "success"
    seen = result["textResultForLlm"]
    assert "The verifier failed (exit 1" in seen
    assert "FIRST FAILING TEST: test_calc.py::test_add_0" in seen
    assert "shellId" not in seen
    assert estimate_tokens(seen) < estimate_tokens(output)


def test_a_green_run_becomes_one_line(make_repo: Callable[..., Path]) -> None:
    repo = make_repo({"calc.py": FIXED, "test_calc.py": TESTS})
    output, code = pytest_output(repo)
    payload = copilot_post(repo, PYTEST, completed(output, code))
    seen = modified(run_post_tool(payload, host="copilot", environ=ENV))["textResultForLlm"]
    assert seen.startswith("greenloop: green: 12 passed (pytest).")
    assert "\n" not in seen


def test_a_long_output_is_read_from_the_file_copilot_saved_it_in(
    calc_repo: Path, tmp_path: Path
) -> None:
    output, code = pytest_output(calc_repo, "-vv")
    text = saved_to_file(tmp_path / "copilot-tool-output.txt", output, code)
    assert "12 failed" not in text  # the preview alone holds no verdict
    seen = modified(run_post_tool(copilot_post(calc_repo, PYTEST, text), environ=ENV))
    assert "): 12 failed." in seen["textResultForLlm"]
    assert "FIRST FAILING TEST: test_calc.py::test_add_0" in seen["textResultForLlm"]


def test_a_saved_output_that_is_gone_passes_through(calc_repo: Path, tmp_path: Path) -> None:
    output, code = pytest_output(calc_repo)
    text = saved_to_file(tmp_path / "gone.txt", output, code)
    (tmp_path / "gone.txt").unlink()
    answer = run_post_tool(copilot_post(calc_repo, PYTEST, text), environ=ENV)
    assert answer == HookAnswer()


def test_a_command_still_running_after_initial_wait_passes_through(calc_repo: Path) -> None:
    output, _ = pytest_output(calc_repo)
    text = f"{output[:300]}\n{STILL_RUNNING}"
    answer = run_post_tool(copilot_post(calc_repo, PYTEST, text), host="copilot", environ=ENV)
    assert answer == HookAnswer()


def test_copilots_claude_format_event_gets_the_reply_copilot_reads(calc_repo: Path) -> None:
    output, code = pytest_output(calc_repo)
    payload = claude_format_post(calc_repo, PYTEST, completed(output, code))
    result = modified(run_post_tool(payload, environ=ENV))  # no --host: .claude/settings.json's
    assert "FIRST FAILING TEST: test_calc.py::test_add_0" in result["textResultForLlm"]


def test_another_tool_or_a_non_verifier_gets_no_reply(calc_repo: Path) -> None:
    view = copilot_post(calc_repo, PYTEST, "1. x = 1", tool="view")
    listing = copilot_post(calc_repo, "ls", completed("calc.py", 0))
    assert run_post_tool(view, host="copilot", environ=ENV) == HookAnswer()
    assert run_post_tool(listing, host="copilot", environ=ENV) == HookAnswer()
    assert nothing_to_do(view, ENV)
    assert nothing_to_do(listing, ENV)
    assert not nothing_to_do(copilot_post(calc_repo, PYTEST, completed("", 1)), ENV)


def test_the_cli_answers_copilot_with_modified_result(calc_repo: Path) -> None:
    output, code = pytest_output(calc_repo)
    run = subprocess.run(
        [sys.executable, "-m", "greenloop", "hook", "post-tool", "--host", "copilot"],
        cwd=calc_repo,
        input=copilot_post(calc_repo, PYTEST, completed(output, code)),
        capture_output=True,
        timeout=hang(120),
        check=False,
    )
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)["modifiedResult"]["textResultForLlm"]
    assert "FIRST FAILING TEST: test_calc.py::test_add_0" in seen


def test_a_command_claudes_pre_tool_use_entry_wrapped_is_judged_by_its_own_exit_code(
    calc_repo: Path,
) -> None:
    # Copilot CLI runs .claude/settings.json's PreToolUse too, and applies its updatedInput
    output, code = pytest_output(calc_repo)
    text = completed(f"{output}\n[greenloop: exit {code}]", 0)
    payload = claude_format_post(calc_repo, wrap(PYTEST), text)
    seen = modified(run_post_tool(payload, environ=ENV))["textResultForLlm"]
    assert "The verifier failed (exit 1, " in seen
    assert "[greenloop: exit" not in seen

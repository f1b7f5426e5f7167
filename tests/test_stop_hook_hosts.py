"""``greenloop hook stop`` fed each host's documented Stop payload; the reply in that host's schema.

The payloads are the shapes each host documents (and, for Claude Code, Codex CLI, Gemini CLI and
Copilot CLI, the ones their real CLIs send in tests/test_stop_hook_e2e.py): Claude Code's hooks
reference, Codex's ``stop.command.input`` schema, Gemini CLI's AfterAgent input, Copilot CLI's
agentStop input, Cursor's stop input, VS Code's hooks reference (Stop: ``hookSpecificOutput``
with ``decision``), Goose's hooks guide (the Open Plugins payload: ``event``, no working
directory), Kimi Code's hook runner (Claude's shape, answered only through
``hookSpecificOutput.permissionDecision``), the OpenHands SDK's ``HookEvent``. Real repos, the real
verifier, the hook as a process.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from limits import hang
from test_claude_hook import CALC, CALC_BUG, PYTEST, project

PY = sys.executable
CODEX_STOP_OUTPUT_KEYS = {
    "continue",
    "decision",
    "reason",
    "stopReason",
    "suppressOutput",
    "systemMessage",
}


def payload(host: str, root: Path, session: str = "sess-1", **extra: Any) -> str:
    """The Stop event each host sends, as its documentation gives it."""
    shapes: dict[str, dict[str, Any]] = {
        "claude": {
            "session_id": session,
            "transcript_path": str(root / "t.jsonl"),
            "cwd": str(root),
            "permission_mode": "default",
            "hook_event_name": "Stop",
            "stop_hook_active": False,
            "last_assistant_message": "Done.",
            "background_tasks": [],
        },
        "codex": {
            "session_id": session,
            "turn_id": "turn-1",
            "transcript_path": None,
            "cwd": str(root),
            "hook_event_name": "Stop",
            "model": "gpt-5",
            "permission_mode": "default",
            "stop_hook_active": False,
            "last_assistant_message": "Done.",
        },
        "gemini": {
            "session_id": session,
            "transcript_path": "",
            "cwd": str(root),
            "hook_event_name": "AfterAgent",
            "timestamp": "2026-12-04T12:00:00.000Z",
            "prompt": "fix it",
            "prompt_response": "Done.",
            "stop_hook_active": False,
        },
        "copilot": {
            "timestamp": 1704614750000,
            "cwd": str(root),
            "sessionId": session,
            "transcriptPath": str(root / "t.jsonl"),
            "stopReason": "end_turn",
        },
        "cursor": {
            "conversation_id": session,
            "generation_id": "gen-1",
            "model": "claude-sonnet",
            "hook_event_name": "stop",
            "cursor_version": "2.0.77",
            "workspace_roots": [str(root)],
            "user_email": None,
            "status": "completed",
            "loop_count": 0,
        },
        "vscode": {
            "timestamp": "2026-12-06T10:30:00.000Z",
            "cwd": str(root),
            "sessionId": session,
            "hookEventName": "Stop",
            "transcript_path": str(root / "t.json"),
            "stop_hook_active": False,
        },
        "goose": {  # no working directory: the hook runs in the session's
            "event": "Stop",
            "session_id": session,
            "last_assistant_message": "Done. I updated the file and ran the tests.",
        },
        "kimi": {
            "hook_event_name": "Stop",
            "session_id": session,
            "cwd": str(root),
            "stop_hook_active": False,
        },
        "openhands": {
            "event_type": "Stop",
            "tool_name": None,
            "tool_input": None,
            "tool_response": None,
            "message": None,
            "session_id": session,
            "working_dir": str(root),
            "metadata": {"reason": "agent_finished"},
        },
    }
    return json.dumps({**shapes[host], **extra})


NAMED = {"kimi": ("--host", "kimi")}
"""Kimi Code sends Claude Code's shape: install names the host."""


def ask(host: str, root: Path, **extra: Any) -> subprocess.CompletedProcess[str]:
    """The hook as the host runs it: its payload, its command line, in the project."""
    return hook(payload(host, root, **extra), *NAMED.get(host, ()), cwd=root)


def hook(stdin: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(
        [PY, "-m", "greenloop", "hook", "stop", *args],
        check=False,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=hang(120),
        cwd=cwd,
    )
    assert out.returncode == 0, out.stderr  # every host: exit 0, whatever happened
    return out


def answer(out: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(out.stdout) if out.stdout.strip() else {}
    return data


def blocked_with(host: str, out: subprocess.CompletedProcess[str]) -> str:
    """The digest a blocking reply hands the agent, checked against the host's reply schema."""
    data = answer(out)
    if host == "claude":
        assert data["decision"] == "block"
        assert data["hookSpecificOutput"]["hookEventName"] == "Stop"
        return str(data["hookSpecificOutput"]["additionalContext"])
    if host == "codex":
        assert set(data) <= CODEX_STOP_OUTPUT_KEYS  # its schema allows no other key
        assert data["decision"] == "block"
        return str(data["reason"])
    if host == "gemini":
        assert data["decision"] == "deny"
        return str(data["reason"])
    if host in ("copilot", "goose"):
        assert set(data) == {"decision", "reason"}
        assert data["decision"] == "block"
        return str(data["reason"])
    if host == "vscode":  # the documented nesting, and the Claude-compatible pair beside it
        specific = data["hookSpecificOutput"]
        assert specific["hookEventName"] == "Stop"
        assert specific["decision"] == "block"
        assert data["decision"] == "block"
        assert data["reason"] == specific["reason"]
        return str(specific["reason"])
    if host == "kimi":  # the one shape Kimi's runner reads as a block
        specific = data["hookSpecificOutput"]
        assert specific["permissionDecision"] == "deny"
        return str(specific["permissionDecisionReason"])
    if host == "openhands":
        assert data["decision"] == "deny"
        assert "additionalContext" not in data  # it would replace reason as the feedback
        return str(data["reason"])
    assert set(data) == {"followup_message"}
    return str(data["followup_message"])


def told_the_user(host: str, out: subprocess.CompletedProcess[str]) -> str:
    """The message an allowed stop leaves for the user, in the host's way of saying it."""
    data = answer(out)
    assert "decision" not in data
    assert "followup_message" not in data
    if host in ("copilot", "cursor", "goose", "kimi", "openhands"):  # no field for the user
        return out.stderr
    return str(data["systemMessage"])


HOSTS = ("claude", "codex", "gemini", "copilot", "cursor", "vscode", "goose", "kimi", "openhands")


@pytest.mark.parametrize("host", HOSTS)
def test_hook_blocks_a_red_tree_with_the_digest_in_each_hosts_schema(
    host: str, make_repo: Callable[..., Path]
) -> None:
    root = project(make_repo, CALC_BUG)
    digest = blocked_with(host, ask(host, root))
    assert "test_calc.py::test_add" in digest
    assert "The verifier failed" in digest


@pytest.mark.parametrize("host", HOSTS)
def test_hook_allows_a_green_tree_silently_on_each_host(
    host: str, make_repo: Callable[..., Path]
) -> None:
    root = project(make_repo, CALC)
    out = ask(host, root)
    assert out.stdout == ""
    assert out.stderr == ""


@pytest.mark.parametrize("host", HOSTS)
def test_greenloops_own_bound_ends_the_loop_on_each_host(
    host: str, make_repo: Callable[..., Path]
) -> None:
    # the host's own flags say nothing (Copilot and Codex send none that bounds): greenloop counts
    root = project(make_repo, CALC_BUG, max_iters=2)
    answers = []
    for body in ("return a - b", "return a * b", "return 42"):
        (root / "calc.py").write_text(f"def add(a, b):\n    {body}\n")
        answers.append(ask(host, root))
    blocked_with(host, answers[0])
    blocked_with(host, answers[1])
    assert "after 2 blocked stops" in told_the_user(host, answers[2])


def test_hook_reads_the_host_from_the_payload_and_host_overrides_it(
    make_repo: Callable[..., Path],
) -> None:
    root = project(make_repo, CALC_BUG)
    # Gemini's payload, read as Codex's: the reply follows --host
    out = hook(payload("gemini", root), "--host", "codex")
    assert answer(out)["decision"] == "block"


def test_the_wall_clock_bound_allows_a_stop_an_hour_after_the_first_block(
    make_repo: Callable[..., Path],
) -> None:
    root = project(make_repo, CALC_BUG)
    assert answer(hook(payload("codex", root)))["decision"] == "block"
    state_file = root / ".git" / "greenloop" / "hooks" / "sess-1.json"
    state = json.loads(state_file.read_text())
    state["since"] = time.time() - 3700  # the first block was 3 700 s ago (max_time 3 600)
    state_file.write_text(json.dumps(state))
    (root / "calc.py").write_text("def add(a, b):\n    return 0\n")
    message = told_the_user("codex", hook(payload("codex", root)))
    assert "max_time = 3600" in message


def test_claude_subagent_stop_blocks_the_subagent_with_its_own_count(
    make_repo: Callable[..., Path],
) -> None:
    root = project(make_repo, CALC_BUG, max_iters=1)
    event = payload(
        "claude",
        root,
        hook_event_name="SubagentStop",
        agent_id="agent-7",
        agent_type="general-purpose",
        agent_transcript_path=str(root / "a.jsonl"),
    )
    data = answer(hook(event))
    assert data["decision"] == "block"
    assert "test_calc.py::test_add" in data["reason"]  # 2.1.197 has no SubagentStop context
    assert answer(hook(payload("claude", root)))["decision"] == "block"  # the main agent: its own


def test_claude_task_completed_is_refused_with_the_digest_as_its_reason(
    make_repo: Callable[..., Path],
) -> None:
    root = project(make_repo, CALC_BUG)
    event = payload("claude", root, hook_event_name="TaskCompleted", task_id="3", task_subject="x")
    data = answer(hook(event))
    assert data["decision"] == "block"
    assert "test_calc.py::test_add" in data["reason"]
    assert "hookSpecificOutput" not in data  # TaskCompleted takes no additionalContext


def test_claude_with_background_tasks_running_defers_without_running_the_verifier(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    ran = tmp_path / "verifier-ran"
    root = project(make_repo, CALC_BUG, run=f"touch {ran} && {PYTEST}")
    tasks = [{"id": "b1", "type": "shell", "status": "running", "description": "npm run build"}]
    message = told_the_user("claude", hook(payload("claude", root, background_tasks=tasks)))
    assert "background task(s) still running (shell)" in message
    assert not ran.exists()
    done = [{**tasks[0], "status": "completed"}]
    assert answer(hook(payload("claude", root, background_tasks=done)))["decision"] == "block"


def test_cursor_aborted_loop_is_not_verified(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    ran = tmp_path / "verifier-ran"
    root = project(make_repo, CALC_BUG, run=f"touch {ran} && {PYTEST}")
    out = hook(payload("cursor", root, status="aborted"))
    assert "ended aborted" in told_the_user("cursor", out)
    assert out.stdout == "{}\n"
    assert not ran.exists()


@pytest.mark.parametrize("host", HOSTS)
def test_malformed_hook_json_allows_the_stop_with_one_line_in_the_hosts_convention(
    host: str, tmp_path: Path
) -> None:
    out = hook("{not json", "--host", host, cwd=tmp_path)
    message = told_the_user(host, out)
    assert "could not read the Stop hook input" in message
    assert len(message.strip().splitlines()) == 1


def test_an_unknown_host_allows_the_stop_and_names_the_known_ones(tmp_path: Path) -> None:
    out = hook(payload("gemini", tmp_path), "--host", "windsurf", cwd=tmp_path)
    message = told_the_user("gemini", out)  # said in the convention of the host that sent it
    assert "unknown --host 'windsurf'" in message
    assert "claude, codex, gemini, copilot, cursor, vscode, goose, kimi, openhands" in message


@pytest.mark.parametrize("host", ["vscode", "goose", "openhands"])
def test_each_new_hosts_payload_names_its_host_without_host(
    host: str, make_repo: Callable[..., Path]
) -> None:
    # install writes no --host for VS Code (it shares Copilot's file), and none is needed for
    # the others: their payloads say who sent them
    root = project(make_repo, CALC_BUG)
    out = hook(payload(host, root), cwd=root)
    assert "test_calc.py::test_add" in blocked_with(host, out)


def test_vscode_subagent_stop_blocks_at_the_top_level_with_its_own_count(
    make_repo: Callable[..., Path],
) -> None:
    root = project(make_repo, CALC_BUG, max_iters=1)
    sub = payload("vscode", root, hookEventName="SubagentStop", agent_id="subagent-456",
                  agent_type="Plan")  # fmt: skip
    data = answer(hook(sub))
    assert data["decision"] == "block"  # SubagentStop's documented output: top-level
    assert "test_calc.py::test_add" in data["reason"]
    assert "hookSpecificOutput" not in data
    assert answer(hook(payload("vscode", root)))["decision"] == "block"  # the main agent: its own


def test_vscode_running_copilots_file_and_copilot_cli_running_it_are_told_apart(
    make_repo: Callable[..., Path],
) -> None:
    # the Stop entry install copilot writes has no --host: Copilot CLI runs it too, with its
    # Claude-format payload, and gets Copilot's reply (no hookSpecificOutput)
    root = project(make_repo, CALC_BUG)
    cli = {"hook_event_name": "Stop", "session_id": "s", "timestamp": "2026-12-06T16:25:39.049Z",
           "cwd": str(root), "stop_reason": "end_turn", "stop_hook_active": False}  # fmt: skip
    data = answer(hook(json.dumps(cli)))
    assert data["decision"] == "block"
    assert "hookSpecificOutput" not in data
    assert "hookSpecificOutput" in answer(hook(payload("vscode", root)))


def test_kimi_without_host_is_answered_as_claude_so_install_names_it(
    make_repo: Callable[..., Path],
) -> None:
    root = project(make_repo, CALC_BUG)
    data = answer(hook(payload("kimi", root)))
    assert "permissionDecision" not in data.get("hookSpecificOutput", {})
    named = answer(ask("kimi", root, session_id="sess-2"))  # another session: its own count
    assert named["hookSpecificOutput"]["permissionDecision"] == "deny"


SKIPPED = "import pytest\nfrom calc import add\n\n\n@pytest.mark.skip\ndef test_add():\n    assert add(2, 3) == 5\n"


@pytest.mark.parametrize("host", HOSTS)
def test_goal_gate_blocks_an_untrusted_green_in_each_hosts_schema(
    host: str, make_repo: Callable[..., Path]
) -> None:
    # the goal recipe (install HOST --goal): the failing test skipped is no green to end a goal on
    root = project(make_repo, CALC_BUG, tests=SKIPPED)
    reason = blocked_with(host, hook(payload(host, root), *NAMED.get(host, ()), "--goal", cwd=root))
    assert reason.startswith("greenloop: not a trusted green")
    assert "no tests ran" in reason


def test_without_the_goal_gate_an_untrusted_green_is_told_to_the_user_only(
    make_repo: Callable[..., Path],
) -> None:
    root = project(make_repo, CALC_BUG, tests=SKIPPED)
    message = told_the_user("claude", hook(payload("claude", root)))
    assert "UNTRUSTED GREEN" in message


def test_the_goal_gate_keeps_greenloops_bound(make_repo: Callable[..., Path]) -> None:
    root = project(make_repo, CALC_BUG, tests=SKIPPED, max_iters=1)
    assert answer(hook(payload("codex", root), "--goal"))["decision"] == "block"
    (root / "test_calc.py").write_text(SKIPPED.replace("@pytest.mark.skip", "@pytest.mark.skip()"))
    assert "after 1 blocked stops" in told_the_user("codex", hook(payload("codex", root), "--goal"))

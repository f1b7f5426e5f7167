"""``greenloop hook stop`` fed each host's documented Stop payload; the reply in that host's schema.

The payloads are the shapes each host documents (and, for Claude Code, Codex CLI, Gemini CLI and
Copilot CLI, the ones their real CLIs send in tests/test_stop_hook_e2e.py): Claude Code's hooks
reference, Codex's ``stop.command.input`` schema, Gemini CLI's AfterAgent input, Copilot CLI's
agentStop input, Cursor's stop input. Real repos, the real verifier, the hook as a process.
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
    }
    return json.dumps({**shapes[host], **extra})


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
    if host == "copilot":
        assert data["decision"] == "block"
        return str(data["reason"])
    assert set(data) == {"followup_message"}
    return str(data["followup_message"])


def told_the_user(host: str, out: subprocess.CompletedProcess[str]) -> str:
    """The message an allowed stop leaves for the user, in the host's way of saying it."""
    data = answer(out)
    assert "decision" not in data
    assert "followup_message" not in data
    if host in ("copilot", "cursor"):  # no reply field for the user: stderr
        return out.stderr
    return str(data["systemMessage"])


HOSTS = ("claude", "codex", "gemini", "copilot", "cursor")


@pytest.mark.parametrize("host", HOSTS)
def test_hook_blocks_a_red_tree_with_the_digest_in_each_hosts_schema(
    host: str, make_repo: Callable[..., Path]
) -> None:
    root = project(make_repo, CALC_BUG)
    digest = blocked_with(host, hook(payload(host, root)))
    assert "test_calc.py::test_add" in digest
    assert "The verifier failed" in digest


@pytest.mark.parametrize("host", HOSTS)
def test_hook_allows_a_green_tree_silently_on_each_host(
    host: str, make_repo: Callable[..., Path]
) -> None:
    root = project(make_repo, CALC)
    out = hook(payload(host, root))
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
        answers.append(hook(payload(host, root)))
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
    out = hook(payload("gemini", tmp_path), "--host", "vscode", cwd=tmp_path)
    message = told_the_user("gemini", out)  # said in the convention of the host that sent it
    assert "unknown --host 'vscode'" in message
    assert "claude, codex, gemini, copilot, cursor" in message

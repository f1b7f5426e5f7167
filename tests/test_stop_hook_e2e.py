"""``greenloop hook stop`` inside each host's real CLI, against a scripted model on 127.0.0.1.

For Claude Code, Codex CLI, Gemini CLI and Copilot CLI: ``greenloop install HOST`` in a repo whose
test fails; the scripted agent says it is done at once, the hook blocks with the digest, the next
model request carries it, the agent fixes the bug and the stop on the green suite is allowed. And a
hook that can never succeed (every attempt fails differently) ends the session within greenloop's
own bound: ``max_iters`` blocks, then the stop is allowed; Codex and Copilot put no cap of their
own on continuations. Cursor has no CLI that runs here: tests/test_stop_hook_hosts.py feeds it its
documented payloads.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agent_clis import clean_environ, require_cli
from greenloop.demo.script import Reply
from greenloop.demo.server import ReplayServer
from limits import hang

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
PYPROJECT = (
    "[tool.greenloop]\nmax_iters = {max_iters}\n"
    '[[tool.greenloop.stage]]\nname = "tests"\nrun = "{python} -m pytest -q -p no:cacheprovider"\n'
)
DIGEST_MARK = "test_calc.py::test_add"


@dataclass(frozen=True, slots=True, kw_only=True)
class Session:
    """One run of a host's CLI: what the model was sent, in order, and how the CLI ended."""

    requests: list[str]
    """Each main request's conversation as text."""
    exit_code: int
    output: str


# ---------------------------------------------------------------- each host's tool calls


def edit(host: str, target: Path, old: str, new: str) -> list[Reply]:
    """The tool calls with which ``host``'s agent reads ``target`` and replaces ``old`` by ``new``."""
    if host == "claude":
        return [
            Reply.call("Read", file_path=str(target)),
            Reply.call("Edit", file_path=str(target), old_string=old, new_string=new),
        ]
    if host == "codex":
        patch = (
            f"apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: {target.name}\n@@\n"
            f"-    return {old}\n+    return {new}\n*** End Patch\nEOF"
        )
        return [Reply.call("exec_command", cmd=patch)]
    if host == "gemini":
        return [
            Reply.call("read_file", file_path=str(target)),
            Reply.call(
                "replace",
                file_path=str(target),
                instruction="fix add",
                old_string=old,
                new_string=new,
            ),
        ]
    return [  # copilot
        Reply.call("view", path=str(target)),
        Reply.call("edit", path=str(target), old_str=old, new_str=new),
    ]


# ---------------------------------------------------------------- each host's CLI


def run_claude(repo: Path, home: Path, server: ReplayServer, path: list[Path]) -> Session:
    environ = clean_environ(
        home,
        *path,
        ANTHROPIC_BASE_URL=server.root_url,
        ANTHROPIC_API_KEY="sk-ant-dummy",
        ANTHROPIC_MODEL="claude-sonnet-4-5",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
    )
    command = ["claude", "-p", "--output-format", "json", "--permission-mode", "acceptEdits"]
    out = _run(command, repo, environ, "Make the tests pass.")
    return Session(requests=[_text(r, "messages") for r in server.main_requests], **out)


CODEX_CONFIG = """model = "replay-model"
model_provider = "replay"
check_for_update_on_startup = false

[model_providers.replay]
name = "Replay"
base_url = "{base_url}"
env_key = "REPLAY_API_KEY"
wire_api = "responses"
request_max_retries = 1
stream_max_retries = 1

[projects."{repo}"]
trust_level = "trusted"

[analytics]
enabled = false

[feedback]
enabled = false
"""


def run_codex(repo: Path, home: Path, server: ReplayServer, path: list[Path]) -> Session:
    environ = clean_environ(home, *path, REPLAY_API_KEY="sk-dummy", CODEX_HOME=str(home / ".codex"))
    (home / ".codex").mkdir(exist_ok=True)
    config = CODEX_CONFIG.format(base_url=server.base_url, repo=repo)
    (home / ".codex" / "config.toml").write_text(config)
    command = [
        "codex",
        "exec",
        "-c",
        "sandbox_mode=workspace-write",
        "-c",
        "approval_policy=never",
        "--dangerously-bypass-hook-trust",  # the hook greenloop installed, vetted by this test
        "-",
    ]
    out = _run(command, repo, environ, "Make the tests pass.")
    return Session(requests=[_text(r, "input") for r in server.main_requests], **out)


GEMINI_SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "privacy": {"usageStatisticsEnabled": False},
    "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
    "telemetry": {"enabled": False},
}


def run_gemini(repo: Path, home: Path, server: ReplayServer, path: list[Path]) -> Session:
    environ = clean_environ(
        home,
        *path,
        GEMINI_API_KEY="dummy",
        GOOGLE_GEMINI_BASE_URL=server.root_url,
        # a project's settings (and so its hooks) are read only in a trusted folder; --skip-trust
        # trusts it too late for that (0.61.0), the variable does not
        GEMINI_CLI_TRUST_WORKSPACE="true",
    )
    (home / ".gemini").mkdir(exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(GEMINI_SETTINGS))
    command = [
        "gemini",
        "--skip-trust",
        "--approval-mode",
        "auto_edit",
        "--output-format",
        "json",
    ]
    out = _run(command, repo, environ, "Make the tests pass.")
    return Session(requests=[_text(r, "contents") for r in server.main_requests], **out)


def run_copilot(repo: Path, home: Path, server: ReplayServer, path: list[Path]) -> Session:
    environ = clean_environ(
        home,
        *path,
        COPILOT_PROVIDER_BASE_URL=server.base_url,
        COPILOT_PROVIDER_API_KEY="sk-dummy",
        COPILOT_MODEL="gpt-4.1",
        COPILOT_OFFLINE="true",
        COPILOT_AUTO_UPDATE="false",
        COPILOT_ALLOW_ALL="true",  # "true" exactly: also trusts the folder, so its hooks load
    )
    command = ["copilot", "-p", "Make the tests pass.", "--allow-all-tools", "--no-auto-update"]
    out = _run(command, repo, environ, "")
    return Session(requests=[_text(r, "messages") for r in server.main_requests], **out)


RUNNERS: Mapping[str, Callable[[Path, Path, ReplayServer, list[Path]], Session]] = {
    "claude": run_claude,
    "codex": run_codex,
    "gemini": run_gemini,
    "copilot": run_copilot,
}
APIS = {"claude": "messages", "codex": "responses", "gemini": "gemini", "copilot": "chat"}


def _run(command: list[str], repo: Path, environ: dict[str, str], stdin: str) -> dict[str, Any]:
    out = subprocess.run(
        command,
        cwd=repo,
        env=environ,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=hang(600),
        check=False,
    )
    return {"exit_code": out.returncode, "output": out.stdout + out.stderr}


def _text(request: Mapping[str, Any], key: str) -> str:
    return json.dumps(request.get(key, []))


def install(host: str, repo: Path, home: Path) -> None:
    # the hook runs `greenloop hook stop`: this interpreter's bin dir comes first on PATH
    environ = clean_environ(home, Path(sys.executable).parent, XDG_STATE_HOME=str(home / "state"))
    out = subprocess.run(
        [sys.executable, "-m", "greenloop", "install", host],
        cwd=repo,
        env=environ,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr


def session(host: str, repo: Path, home: Path, script: list[Reply]) -> tuple[Session, ReplayServer]:
    path = [Path(sys.executable).parent, require_cli(host)]
    install(host, repo, home)
    with ReplayServer(script, api=APIS[host]) as server:  # type: ignore[arg-type]
        return RUNNERS[host](repo, home, server, path), server


def with_digest(requests: list[str]) -> list[int]:
    """Which requests carry greenloop's digest."""
    return [i for i, text in enumerate(requests) if DIGEST_MARK in text]


HOSTS = sorted(RUNNERS)


@pytest.mark.parametrize("host", HOSTS)
def test_the_real_host_is_blocked_on_a_red_tree_fixes_it_and_stops_at_green(
    host: str, tmp_path: Path, make_repo: Callable[..., Path]
) -> None:
    require_cli(host)
    repo = make_repo(
        {
            "calc.py": BUGGY,
            "test_calc.py": TEST,
            "pyproject.toml": PYPROJECT.format(python=sys.executable, max_iters=3),
        }
    )
    script = [
        Reply.say("All done."),  # stops with the test still failing
        *edit(host, repo / "calc.py", "a - b", "a + b"),
        Reply.say("Fixed add()."),
    ]
    result, server = session(host, repo, tmp_path / "home", script)
    assert result.exit_code == 0, result.output
    assert (repo / "calc.py").read_text() == FIXED, result.output
    requests = result.requests
    assert DIGEST_MARK not in requests[0]
    assert with_digest(requests)[0] == 1, requests  # the stop right after "All done." was blocked
    assert server.remaining == 0
    # the stop on the green suite was allowed: no request after the last scripted answer
    assert len(requests) == len(script), [r[-300:] for r in requests]


@pytest.mark.parametrize("host", HOSTS)
def test_a_hook_that_never_succeeds_ends_the_real_session_within_greenloops_bound(
    host: str, tmp_path: Path, make_repo: Callable[..., Path]
) -> None:
    require_cli(host)
    repo = make_repo(
        {
            "calc.py": BUGGY,
            "test_calc.py": TEST,
            "pyproject.toml": PYPROJECT.format(python=sys.executable, max_iters=2),
        }
    )
    target = repo / "calc.py"
    script = [  # every attempt fails, each differently (no "same failure" shortcut)
        Reply.say("Done."),
        *edit(host, target, "a - b", "a * b"),
        Reply.say("Done again."),
        *edit(host, target, "a * b", "a - b - 1"),
        Reply.say("Done a third time."),
    ]
    result, server = session(host, repo, tmp_path / "home", script)
    assert result.exit_code == 0, result.output
    assert server.remaining == 0
    # two blocks (max_iters = 2), then the stop is allowed: nothing after the last answer
    assert len(result.requests) == len(script), [r[-300:] for r in result.requests]
    [state] = (repo / ".git" / "greenloop" / "hooks").glob("*.json")
    assert json.loads(state.read_text())["blocks"] == 2
    assert json.loads(state.read_text())["ended"] is True

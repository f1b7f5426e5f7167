"""``greenloop hook post-tool`` end to end: the real Claude Code, Gemini CLI and Copilot CLI run a
real pytest suite through their shell tool, and the scripted model server on 127.0.0.1 records what the
model was sent next: the digest, not the raw output (issue 25)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_clis import clean_environ, require_cli
from greenloop.demo.script import Reply
from greenloop.demo.server import ReplayServer
from greenloop.digest import estimate_tokens
from greenloop.integrations.install_hosts import Settings, target
from limits import hang

TESTS, FAILING = 250, 50
SHOP = (
    "def price(qty, unit):\n"
    "    if qty % 5 == 0:\n"
    "        raise ValueError(f'no price for a batch of {qty}')\n"
    "    return qty * unit\n"
)
FIXED = "def price(qty, unit):\n    return qty * unit\n"
PYPROJECT = '[tool.pytest.ini_options]\npythonpath = ["src"]\n'
COMMAND = f"{sys.executable} -m pytest -p no:cacheprovider"
HOOK = {"type": "command", "command": "greenloop hook post-tool", "timeout": 60}
WRAP_ALWAYS_HOOK = {**HOOK, "command": "GREENLOOP_CLAUDE_WRAP=always greenloop hook post-tool"}
CLAUDE_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure")
GEMINI_SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "privacy": {"usageStatisticsEnabled": False},
    "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
    "telemetry": {"enabled": False},
}


def suite() -> str:
    """250 tests; every fifth prices a batch of 5 and fails inside the project's code."""
    cases = [f"def test_price_{i}():\n    assert price({i}, 2) == {2 * i}\n" for i in range(TESTS)]
    return "from shop import price\n\n\n" + "\n\n".join(cases)


def shop_repo(make_repo: Callable[..., Path], code: str) -> Path:
    files = {
        "src/shop/__init__.py": code,
        "tests/test_shop.py": suite(),
        "pyproject.toml": PYPROJECT,
    }
    return make_repo(files)


def run_claude(repo: Path, tmp_path: Path) -> str:
    """Claude Code runs the suite once through Bash; the tool result the model was sent next."""
    node_bin = require_cli("claude")
    hooks = {event: [{"matcher": "Bash", "hooks": [HOOK]}] for event in CLAUDE_EVENTS}
    # as `install claude --wrap` writes it: Bash is allowed on Claude's command line, where no
    # settings rule the hook could read says so
    hooks["PreToolUse"] = [{"matcher": "Bash", "hooks": [WRAP_ALWAYS_HOOK]}]
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))
    script = [
        Reply.call("Bash", "Running the tests.", command=COMMAND, description="run the tests"),
        Reply.say("Read the results."),
    ]
    with ReplayServer(script, api="messages") as server:
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
        claude = subprocess.run(
            ["claude", "-p", "--output-format", "json", "--allowedTools", "Bash"],
            cwd=repo,
            env=environ,
            input="Run the test suite.",
            capture_output=True,
            text=True,
            timeout=hang(300),
            check=False,
        )
    assert claude.returncode == 0, claude.stdout + claude.stderr
    return tool_result(server.main_requests[1]["messages"][-1]["content"])


def tool_result(content: list[dict[str, Any]]) -> str:
    """The tool's output as the model got it, less what Claude Code adds of its own to every
    result (2.1.332: a ``<system-reminder>`` with the session's token budget)."""
    block = next(b for b in content if b.get("type") == "tool_result")
    inner = block["content"]
    text = inner if isinstance(inner, str) else "\n".join(p.get("text", "") for p in inner)
    return re.sub(r"\s*<system-reminder>.*?</system-reminder>\s*", "", text, flags=re.S)


def run_gemini(repo: Path, tmp_path: Path) -> str:
    """Gemini CLI runs the suite once through run_shell_command; what the model was sent next."""
    bin_dir = require_cli("gemini")
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    # Gemini CLI counts a hook's timeout in milliseconds
    hook = {**HOOK, "command": "greenloop hook post-tool --host gemini", "timeout": 60_000}
    # in the user's settings: Gemini CLI runs no project hooks in a folder it does not trust
    hooks = {"AfterTool": [{"matcher": "run_shell_command", "hooks": [hook]}]}
    (home / ".gemini" / "settings.json").write_text(json.dumps({**GEMINI_SETTINGS, "hooks": hooks}))
    script = [
        Reply.call("run_shell_command", command=COMMAND, description="run the tests"),
        Reply.say("Read the results."),
    ]
    with ReplayServer(script, api="gemini") as server:
        environ = clean_environ(home, Path(sys.executable).parent, bin_dir, GEMINI_API_KEY="dummy")
        environ["GOOGLE_GEMINI_BASE_URL"] = server.root_url
        gemini = subprocess.run(
            ["gemini", "--skip-trust", "--approval-mode", "yolo", "--output-format", "json"],
            cwd=repo,
            env=environ,
            input="Run the test suite.",
            capture_output=True,
            text=True,
            timeout=hang(300),
            check=False,
        )
    assert gemini.returncode == 0, gemini.stdout + gemini.stderr
    parts = server.main_requests[1]["contents"][-1]["parts"]
    response = next(p["functionResponse"]["response"] for p in parts if "functionResponse" in p)
    return str(response.get("error") or response.get("output"))


def run_copilot(repo: Path, tmp_path: Path) -> str:
    """Copilot CLI runs the suite once through its bash tool, with the postToolUse entry
    ``greenloop install copilot`` writes; the tool result the model was sent next."""
    bin_dir = require_cli("copilot")
    home = tmp_path / "home"
    spec = target("copilot", repo, global_=False, settings=Settings(base="greenloop"), environ={})
    [entry] = [e for e in spec.entries if e.event == "postToolUse"]
    spec.path.parent.mkdir(parents=True)
    spec.path.write_text(json.dumps({"version": 1, "hooks": {entry.event: [entry.hook]}}))
    # `python` from this interpreter's bin dir: a path outside the folder needs a permission
    # -p cannot ask for; initial_wait: past it (default 30 s) the result is a partial run
    call = Reply.call(
        "bash",
        "Running the tests.",
        command="python -m pytest -p no:cacheprovider",
        description="run the tests",
        initial_wait=300,
    )
    with ReplayServer([call, Reply.say("Read the results.")], api="chat") as server:
        environ = clean_environ(
            home,
            Path(sys.executable).parent,
            bin_dir,
            COPILOT_PROVIDER_BASE_URL=server.base_url,
            COPILOT_PROVIDER_API_KEY="sk-dummy",
            COPILOT_MODEL="gpt-4.1",
            COPILOT_OFFLINE="true",
            COPILOT_AUTO_UPDATE="false",
            COPILOT_ALLOW_ALL="true",  # "true" exactly: also trusts the folder, so its hooks load
        )
        copilot = subprocess.run(
            ["copilot", "-p", "Run the test suite.", "--allow-all-tools", "--no-auto-update"],
            cwd=repo,
            env=environ,
            capture_output=True,
            text=True,
            timeout=hang(300),
            check=False,
        )
    assert copilot.returncode == 0, copilot.stdout + copilot.stderr
    message = server.main_requests[1]["messages"][-1]
    assert message["role"] == "tool", message
    return str(message["content"])


def assert_digest_of_the_red_suite(seen: str) -> None:
    assert estimate_tokens(seen) <= 2000, seen
    assert f"{FAILING} failed, {TESTS - FAILING} passed" in seen
    assert "tests/test_shop.py::test_price_0" in seen  # the first failure's test id
    assert "no price for a batch of 0" in seen  # its message
    assert "src/shop/__init__.py:3" in seen  # the project frame that raised
    assert "Full output (redacted): " in seen
    assert seen.count("FAILED tests/test_shop.py") == 0  # pytest's own summary is gone


def saved_output(repo: Path) -> str:
    logs = sorted((repo / ".git" / "greenloop" / "tool-output").glob("*.log"))
    return logs[-1].read_text()


def test_claude_code_sends_the_model_the_digest_of_a_red_suite_not_its_output(
    tmp_path: Path, make_repo: Callable[..., Path]
) -> None:
    repo = shop_repo(make_repo, SHOP)
    seen = run_claude(repo, tmp_path)
    assert_digest_of_the_red_suite(seen)
    assert "FAILED tests/test_shop.py::test_price_245" in saved_output(repo)


def test_claude_code_sends_one_line_for_a_green_suite(
    tmp_path: Path, make_repo: Callable[..., Path]
) -> None:
    repo = shop_repo(make_repo, FIXED)
    seen = run_claude(repo, tmp_path)
    assert estimate_tokens(seen) <= 60, seen
    assert seen.startswith(f"greenloop: green: {TESTS} passed"), seen
    assert "\n" not in seen.strip()


def test_gemini_cli_sends_the_model_the_digest_of_a_red_suite_not_its_output(
    tmp_path: Path, make_repo: Callable[..., Path]
) -> None:
    repo = shop_repo(make_repo, SHOP)
    seen = run_gemini(repo, tmp_path)
    assert_digest_of_the_red_suite(seen)
    assert "FAILED tests/test_shop.py::test_price_245" in saved_output(repo)


def test_copilot_cli_sends_the_model_the_digest_of_a_red_suite_not_its_output(
    tmp_path: Path, make_repo: Callable[..., Path]
) -> None:
    repo = shop_repo(make_repo, SHOP)
    seen = run_copilot(repo, tmp_path)
    assert_digest_of_the_red_suite(seen)
    assert "Output too large" not in seen  # Copilot's own stand-in for a long output is gone
    assert "FAILED tests/test_shop.py::test_price_245" in saved_output(repo)


def test_copilot_cli_sends_one_line_for_a_green_suite(
    tmp_path: Path, make_repo: Callable[..., Path]
) -> None:
    repo = shop_repo(make_repo, FIXED)
    seen = run_copilot(repo, tmp_path)
    assert estimate_tokens(seen) <= 60, seen
    assert seen.startswith(f"greenloop: green: {TESTS} passed"), seen
    assert "\n" not in seen.strip()

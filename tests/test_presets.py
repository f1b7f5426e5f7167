"""Each agent preset run for real: the actual CLI, through make_command_agent, against a
scripted model server on 127.0.0.1, in a tiny git repo with its own HOME.

Iteration 1 must edit the file on disk and send the prompt to the model; iteration 2
(the preset's ``later`` command) must continue the CLI's own conversation. Cline cannot
continue one non-interactively: its test runs the whole loop, two iterations to green.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from agent_clis import clean_environ, require_cli
from greenloop.agents.base import AgentOutcome, AgentRequest
from greenloop.agents.command import make_command_agent
from greenloop.demo.script import Reply
from greenloop.demo.server import ReplayServer
from greenloop.errors import FatalError
from limits import hang

RUN_ID = "20261202-120000-beef"
ORIGINAL = "def greet():\n    return 'hello world'\n"
FIXED = "def greet():\n    return 'hello greenloop'\n"
PROMPT_1 = "TASK-ALPHA-7: make greet() say 'hello greenloop' in greet.py."
PROMPT_2 = "TASK-BRAVO-9: anything left to do?"


def run_iteration(
    preset: str, repo: Path, environ: Mapping[str, str], iteration: int, prompt: str
) -> AgentOutcome:
    """What the loop does for one iteration: write the prompt file, run the agent."""
    prompt_file = repo / ".git" / "greenloop" / "runs" / RUN_ID / f"iter-{iteration}" / "prompt.md"
    prompt_file.parent.mkdir(parents=True, exist_ok=True)
    prompt_file.write_text(prompt)
    agent = make_command_agent(preset, environ=environ)
    request = AgentRequest(
        prompt=prompt,
        repo=repo,
        iteration=iteration,
        max_iters=3,
        run_id=RUN_ID,
        prompt_file=prompt_file,
        timeout_s=240,
    )
    outcome = agent.run(request)
    assert outcome.ok, f"{preset} iteration {iteration} failed: {outcome.error}\n{outcome.output}"
    return outcome


def text_of(request: Mapping[str, Any], key: str) -> str:
    return json.dumps(request.get(key, []))


def run_two_iterations(
    preset: str, repo: Path, environ: Mapping[str, str], server: ReplayServer, key: str
) -> tuple[AgentOutcome, AgentOutcome]:
    """Iteration 1 edits greet.py; iteration 2 must carry iteration 1's conversation."""
    first = run_iteration(preset, repo, environ, 1, PROMPT_1)
    assert (repo / "greet.py").read_text() == FIXED, first.output
    assert PROMPT_1 in text_of(server.main_requests[0], key)
    sent_in_1 = len(server.main_requests)
    second = run_iteration(preset, repo, environ, 2, PROMPT_2)
    assert len(server.main_requests) > sent_in_1, second.output
    resumed = text_of(server.main_requests[-1], key)
    assert PROMPT_2 in resumed
    assert PROMPT_1 in resumed, "iteration 2 did not continue iteration 1's conversation"
    assert "hello greenloop" in resumed
    return first, second


def test_presets_name_an_executable_and_differ_from_iteration_two() -> None:
    from greenloop.agents.presets import PRESETS

    assert sorted(PRESETS) == ["aider", "claude", "cline", "codex", "gemini", "openhands"]
    for preset in PRESETS.values():
        assert preset.first.split()[0] == preset.executable
        # a preset that cannot continue its conversation says so (and runs one command)
        assert (preset.later != preset.first) is preset.continues
        assert preset.doc


def test_preset_whose_cli_is_missing_is_a_fatal_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(FatalError, match="`claude`, which is not on PATH"):
        make_command_agent("claude", environ={"PATH": str(tmp_path)})


# ---------------------------------------------------------------- claude


def test_claude_preset_edits_the_file_and_continues_its_conversation(
    tmp_path: Path, make_repo: Callable[..., Path]
) -> None:
    bin_dir = require_cli("claude")
    repo = make_repo({"greet.py": ORIGINAL})
    target = str(repo / "greet.py")
    script = [
        Reply.call("Read", "Reading greet.py.", file_path=target),
        Reply.call(
            "Edit", file_path=target, old_string="hello world", new_string="hello greenloop"
        ),
        Reply.say("Changed the greeting in greet.py."),
        Reply.say("Nothing left to do."),
    ]
    with ReplayServer(script, api="messages") as server:
        environ = clean_environ(
            tmp_path / "home",
            bin_dir,
            ANTHROPIC_BASE_URL=server.root_url,
            ANTHROPIC_API_KEY="sk-ant-dummy",
            ANTHROPIC_MODEL="claude-sonnet-4-5",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        )
        first, second = run_two_iterations("claude", repo, environ, server, "messages")
    # --output-format json: one result object per call, kept in the run record
    assert (
        json.loads(first.output.strip().splitlines()[-1])["result"]
        == "Changed the greeting in greet.py."
    )
    assert json.loads(second.output.strip().splitlines()[-1])["result"] == "Nothing left to do."
    # its usage, for --max-cost / --max-tokens (issue 27): what its JSON result reports
    reported = json.loads(first.output.strip().splitlines()[-1])
    assert first.usage.cost_usd == reported["total_cost_usd"] > 0
    assert first.usage.prompt_tokens >= reported["usage"]["input_tokens"] > 0


# ---------------------------------------------------------------- aider

AIDER_EDIT = """I'll change the greeting.

greet.py
```
<<<<<<< SEARCH
    return 'hello world'
=======
    return 'hello greenloop'
>>>>>>> REPLACE
```
"""

# The user's own model settings: the preset passes no model flag, so these decide.
AIDER_CONF = """model: openai/replay-model
weak-model: openai/replay-weak
edit-format: diff
show-model-warnings: false
"""


def seed_aider_model_cache(home: Path) -> None:
    """Aider fetches litellm's model price list unless a fresh non-empty cache exists."""
    cache = home / ".aider" / "caches" / "model_prices_and_context_window.json"
    cache.parent.mkdir(parents=True, exist_ok=True)
    info = {"max_input_tokens": 128000, "max_output_tokens": 4096, "litellm_provider": "openai"}
    cache.write_text(json.dumps({"replay-model": {**info, "mode": "chat"}}))


def test_aider_preset_edits_the_file_and_restores_its_chat_history(
    tmp_path: Path, make_repo: Callable[..., Path]
) -> None:
    bin_dir = require_cli("aider")
    repo = make_repo({"greet.py": ORIGINAL})
    home = tmp_path / "home"
    home.mkdir()
    (home / ".aider.conf.yml").write_text(AIDER_CONF)
    seed_aider_model_cache(home)
    script = [Reply.say(AIDER_EDIT), Reply.say("Nothing left to do.")]
    with ReplayServer(
        script, api="chat", is_side=lambda body: body.get("model") == "replay-weak"
    ) as server:
        environ = clean_environ(
            home,
            bin_dir,
            OPENAI_API_BASE=server.base_url,
            OPENAI_API_KEY="sk-dummy",
            LITELLM_LOCAL_MODEL_COST_MAP="True",
        )
        run_two_iterations("aider", repo, environ, server, "messages")
    assert {r.get("model") for r in server.main_requests} == {"replay-model"}
    history = repo / ".git" / "greenloop" / "runs" / RUN_ID / "aider.chat.history.md"
    assert PROMPT_2 in history.read_text()
    # aider's own files stay out of greenloop's commits: the history is in the run record,
    # and aider adds `.aider*` to .gitignore (its default) for its caches
    assert _git_status(repo).splitlines() == [" M greet.py", "?? .gitignore"]
    assert (repo / ".gitignore").read_text() == ".aider*\n"


def _git_status(repo: Path) -> str:
    return subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


# ---------------------------------------------------------------- codex

CODEX_PATCH = """apply_patch <<'EOF'
*** Begin Patch
*** Update File: greet.py
@@
-    return 'hello world'
+    return 'hello greenloop'
*** End Patch
EOF"""

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

[analytics]
enabled = false

[feedback]
enabled = false
"""


def test_codex_preset_edits_the_file_and_resumes_its_session(
    tmp_path: Path, make_repo: Callable[..., Path]
) -> None:
    bin_dir = require_cli("codex")
    repo = make_repo({"greet.py": ORIGINAL})
    script = [
        Reply.call("exec_command", cmd="cat greet.py"),
        Reply.call("exec_command", cmd=CODEX_PATCH),
        Reply.say("Changed the greeting in greet.py."),
        Reply.say("Nothing left to do."),
    ]
    with ReplayServer(script, api="responses") as server:
        home = tmp_path / "home"
        environ = clean_environ(home, bin_dir, REPLAY_API_KEY="sk-dummy")
        environ["CODEX_HOME"] = str(home / ".codex")
        (home / ".codex").mkdir()
        (home / ".codex" / "config.toml").write_text(CODEX_CONFIG.format(base_url=server.base_url))
        first, second = run_two_iterations("codex", repo, environ, server, "input")
    assert "approval: never" in first.output
    assert "sandbox: workspace-write" in first.output
    assert session_id(first.output) == session_id(second.output) != ""
    # the shell command ran inside codex's workspace-write sandbox and its output came back
    assert "hello world" in text_of(server.main_requests[1], "input")
    assert first.usage.prompt_tokens > 0, first.output[-500:]  # its "tokens used" (issue 27)


def session_id(codex_output: str) -> str:
    found = re.findall(r"^session id: (\S+)$", codex_output, re.MULTILINE)
    return found[0] if found else ""


# ---------------------------------------------------------------- gemini

GEMINI_SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "privacy": {"usageStatisticsEnabled": False},
    "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
    "telemetry": {"enabled": False},
}


def test_gemini_preset_edits_the_file_and_resumes_its_session(
    tmp_path: Path, make_repo: Callable[..., Path]
) -> None:
    bin_dir = require_cli("gemini")
    repo = make_repo({"greet.py": ORIGINAL})
    target = str(repo / "greet.py")
    script = [
        Reply.call("read_file", file_path=target),
        Reply.call(
            "replace",
            file_path=target,
            instruction="greet greenloop",
            old_string="hello world",
            new_string="hello greenloop",
        ),
        Reply.say("Changed the greeting in greet.py."),
        Reply.say("Nothing left to do."),
    ]
    with ReplayServer(script, api="gemini") as server:
        home = tmp_path / "home"
        environ = clean_environ(
            home, bin_dir, GEMINI_API_KEY="dummy", GOOGLE_GEMINI_BASE_URL=server.root_url
        )
        (home / ".gemini").mkdir()
        (home / ".gemini" / "settings.json").write_text(json.dumps(GEMINI_SETTINGS))
        first, second = run_two_iterations("gemini", repo, environ, server, "contents")
    results = [gemini_result(first.output), gemini_result(second.output)]
    assert [r["response"] for r in results] == [
        "Changed the greeting in greet.py.",
        "Nothing left to do.",
    ]
    assert results[0]["session_id"] == results[1]["session_id"]
    # its usage (issue 27): tokens from its stats, no cost (gemini reports none)
    assert first.usage.prompt_tokens > 0
    assert first.usage.cost_usd is None


def gemini_result(output: str) -> dict[str, Any]:
    """The JSON result object (gemini prints a few warning lines before it)."""
    start = output.index("\n{\n") + 1
    result: dict[str, Any] = json.loads(output[start:])
    return result


# ---------------------------------------------------------------- cline

CALC_BUG = "def add(a, b):\n    return a - b\n"
CALC_TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
CALC_TASK = "TASK-CALC-3: make add() in calc.py return the sum."


def cline_home(tmp_path: Path, bin_dir: Path, base_url: str) -> dict[str, str]:
    """A HOME whose Cline is configured the user's way: `cline auth` with an OpenAI-compatible URL."""
    environ = clean_environ(tmp_path / "home", bin_dir, CLINE_NO_AUTO_UPDATE="1")
    auth = ["cline", "auth", "-p", "openai", "-k", "sk-dummy", "-b", base_url, "-m", "replay-model"]
    subprocess.run(auth, env=environ, capture_output=True, text=True, check=True, timeout=hang(120))
    return environ


def tool_names(request: Mapping[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in request.get("tools", [])}


def test_cline_preset_fixes_the_bug_in_two_iterations_without_running_commands(
    tmp_path: Path, make_repo: Callable[..., Path]
) -> None:
    import greenloop

    bin_dir = require_cli("cline")
    repo = make_repo(
        {"calc.py": CALC_BUG, "test_calc.py": CALC_TEST, ".gitignore": "__pycache__/\n"}
    )
    script = [
        # iteration 1: a shell command (not offered, refused), then a wrong edit
        Reply.call("run_commands", commands=["touch ran.txt"]),
        Reply.call("editor", path=str(repo / "calc.py"), old_text="a - b", new_text="a * b"),
        Reply.say("Changed add."),
        # iteration 2, a fresh session: the digest names the failure, the edit fixes it
        Reply.call("editor", path=str(repo / "calc.py"), old_text="a * b", new_text="a + b"),
        Reply.say("Fixed add."),
    ]
    stage = greenloop.StageSpec(
        name="test", run=f"{sys.executable} -m pytest -q -p no:cacheprovider"
    )
    config = greenloop.Config(stages=(stage,), max_iters=3, agent_timeout=240, task=CALC_TASK)
    with ReplayServer(script, api="chat") as server:
        environ = cline_home(tmp_path, bin_dir, server.base_url)
        agent = make_command_agent("cline", environ=environ)
        outcome = greenloop.run_loop(repo, agent, config=config)
    assert outcome.result is greenloop.Result.SUCCESS, outcome.reason
    assert outcome.iterations == 2
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    requests = server.main_requests
    assert len(requests) == 5
    # edits auto-approved, shell commands not offered and the scripted one never ran
    assert "editor" in tool_names(requests[0])
    assert "run_commands" not in tool_names(requests[0])
    assert not (repo / "ran.txt").exists()
    assert CALC_TASK in text_of(requests[0], "messages")
    # iteration 2 is a new conversation: its prompt repeats the task and carries the digest
    second = requests[3]
    assert [m["role"] for m in second["messages"]] == ["system", "user"]
    assert CALC_TASK in text_of(second, "messages")
    assert "test_calc.py::test_add" in text_of(second, "messages")
    assert "6 == 5" in text_of(second, "messages")
    # --json: one JSON event per line in the run record, the last one the run's result
    agent_txt = repo / ".git" / "greenloop" / "runs" / outcome.run_id / "iter-2" / "agent.txt"
    events = [json.loads(line) for line in agent_txt.read_text().splitlines() if line[:1] == "{"]
    assert events[-1]["type"] == "run_result"
    assert events[-1]["text"] == "Fixed add."
    assert events[-1]["model"] == {"id": "replay-model", "provider": "openai-compatible"}

#!/usr/bin/env python3
"""OpenHands CLI (PyPI ``openhands``) through ``--agent openhands`` against the replay server.

Not in CI: the install is ~570 MB (openhands-sdk, openhands-tools with browser-use,
litellm, fastmcp, ...) and pip's resolver had not finished after 13 min here (uv: 143 s);
see docs/agents.md. Install it outside the repo first:

    python3.12 -m venv /tmp/greenloop-agent-clis/openhands-venv
    /tmp/greenloop-agent-clis/openhands-venv/bin/pip install openhands==1.16.0
    # or: uv venv -p python3.12 DIR && uv pip install -p DIR/bin/python openhands==1.16.0

``OPENHANDS_BIN`` overrides the bin directory. The model is configured only through
OpenHands' own settings file (``$HOME/.openhands/agent_settings.json``); the preset passes
no model, key or URL. Two iterations through ``make_command_agent("openhands")``:
iteration 1 edits greet.py via the scripted model's ``file_editor`` tool call, iteration 2
(``--resume --last``) must send iteration 1's conversation back to the model.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from pathlib import Path

from _common import ReplayServer, Reply, check, dump, make_repo

from greenloop.agents.base import AgentRequest
from greenloop.agents.command import make_command_agent

BIN = Path(os.environ.get("OPENHANDS_BIN", "/tmp/greenloop-agent-clis/openhands-venv/bin"))
RUN_ID = "20261202-120000-beef"
PROMPT_1 = "TASK-ALPHA-7: make greet() say 'hello greenloop' in greet.py."
PROMPT_2 = "TASK-BRAVO-9: anything left to do?"
SAFE = "LOW"  # the CLI's default agent asks the model to rate each action's risk


def settings(base_url: str) -> dict[str, object]:
    """What a user's ~/.openhands/agent_settings.json holds for an OpenAI-compatible server."""
    llm = {
        "model": "openai/replay-model",
        "api_key": "sk-dummy",
        "base_url": base_url,
        "usage_id": "agent",
        "num_retries": 0,
    }
    return {"llm": llm, "tools": [{"name": "terminal"}, {"name": "file_editor"}]}


def environ(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LLM_"))}
    env.update(
        HOME=str(home),
        PATH=f"{BIN}:{env.get('PATH', '')}",
        LITELLM_LOCAL_MODEL_COST_MAP="True",  # else litellm fetches its price list from GitHub
        OPENHANDS_SUPPRESS_BANNER="1",
    )
    return env


def iteration(repo: Path, env: dict[str, str], n: int, prompt: str) -> tuple[bool, str]:
    prompt_file = repo / ".git" / "greenloop" / "runs" / RUN_ID / f"iter-{n}" / "prompt.md"
    prompt_file.parent.mkdir(parents=True, exist_ok=True)
    prompt_file.write_text(prompt)
    request = AgentRequest(
        prompt=prompt,
        repo=repo,
        iteration=n,
        max_iters=3,
        run_id=RUN_ID,
        prompt_file=prompt_file,
        timeout_s=900,
    )
    outcome = make_command_agent("openhands", environ=env).run(request)
    print(f"--- iteration {n}: ok={outcome.ok} error={outcome.error}")
    print(outcome.output[-3000:])
    return outcome.ok, outcome.output


def conversation_id(output: str) -> str:
    found = re.findall(r"^Conversation ID: (\w+)$", output, re.MULTILINE)
    return found[-1] if found else ""


def main() -> bool:
    repo = make_repo({"greet.py": "def greet():\n    return 'hello world'\n"})
    target = str(repo / "greet.py")
    script = [
        Reply.call("file_editor", command="view", path=target, security_risk=SAFE),
        Reply.call(
            "file_editor",
            command="str_replace",
            path=target,
            old_str="hello world",
            new_str="hello greenloop",
            security_risk=SAFE,
        ),
        Reply.call("finish", message="Changed the greeting in greet.py."),
        Reply.call("finish", message="Nothing left to do."),
    ]
    home = Path(tempfile.mkdtemp(prefix="gl-oh-home-"))
    with ReplayServer(script, api="chat") as server:
        (home / ".openhands").mkdir()
        (home / ".openhands" / "agent_settings.json").write_text(
            json.dumps(settings(server.base_url))
        )
        env = environ(home)
        ok1, out1 = iteration(repo, env, 1, PROMPT_1)
        ok = check("openhands iteration 1: exit 0", ok1)
        ok &= check(
            "openhands iteration 1: greet.py edited on disk",
            "hello greenloop" in (repo / "greet.py").read_text(),
        )
        first = json.dumps(server.main_requests[0]["messages"]) if server.main_requests else ""
        ok &= check("openhands iteration 1: prompt sent to the model", PROMPT_1 in first)
        sent = len(server.main_requests)
        ok2, out2 = iteration(repo, env, 2, PROMPT_2)
        ok &= check("openhands iteration 2: exit 0", ok2)
        last = json.dumps(server.main_requests[-1]["messages"]) if server.main_requests else ""
        ok &= check("openhands iteration 2: a new model call", len(server.main_requests) > sent)
        ok &= check(
            "openhands iteration 2: continues iteration 1's conversation",
            PROMPT_2 in last and PROMPT_1 in last and "hello greenloop" in last,
        )
        ok &= check(
            "openhands iteration 2: same conversation id",
            conversation_id(out1) == conversation_id(out2) != "",
        )
        print("hits:", sorted(set(server.hits)), "main requests:", len(server.main_requests))
        dump("/tmp/openhands_requests.json", server.requests)
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)

"""The real Cline CLI with ``greenloop mcp`` registered in its MCP settings, against a scripted
model on 127.0.0.1: it calls verify, gets the digest, edits, calls verify again, ends on green."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agent_clis import clean_environ, require_cli
from greenloop.demo.script import Reply
from greenloop.demo.server import ReplayServer
from limits import hang

PY = sys.executable
CALC_BUG = "def add(a, b):\n    return a - b\n"
CALC_TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
CONFIG = f'[tool.greenloop]\n[[tool.greenloop.stage]]\nname = "test"\nrun = "{PY} -m pytest -q -p no:cacheprovider"\n'
PROMPT = "TASK-MCP-5: run greenloop's verify tool and fix calc.py until it is green."


def cline(environ: Mapping[str, str], repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["cline", *args],
        env=environ,
        cwd=repo,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=hang(300),
        check=True,
    )


def tool_result(request: Mapping[str, Any]) -> dict[str, Any]:
    """greenloop's JSON from the last tool call, as the model received it: Cline passes the MCP
    CallToolResult on as JSON text (``content[0].text`` holds the tool's own JSON)."""
    message = request["messages"][-1]
    assert message["role"] == "tool", message
    call_result = json.loads(message["content"])
    assert call_result["isError"] is False
    data: dict[str, Any] = json.loads(call_result["content"][0]["text"])
    return data


def test_cline_calls_greenloop_verify_over_mcp_until_green(
    tmp_path: Path, make_repo: Callable[..., Path]
) -> None:
    bin_dir = require_cli("cline")
    repo = make_repo(
        {
            "calc.py": CALC_BUG,
            "test_calc.py": CALC_TEST,
            "pyproject.toml": CONFIG,
            ".gitignore": "__pycache__/\n",
        }
    )
    script = [
        Reply.call("greenloop__verify"),
        Reply.call("editor", path=str(repo / "calc.py"), old_text="a - b", new_text="a + b"),
        Reply.call("greenloop__verify"),
        Reply.say("Green."),
    ]
    home = tmp_path / "home"
    # in-process sessions (no detached hub daemon left behind), no self-update; `greenloop` on PATH
    environ = clean_environ(
        home,
        bin_dir,
        Path(PY).parent,
        CLINE_SESSION_BACKEND_MODE="local",
        CLINE_NO_AUTO_UPDATE="1",
    )
    # exactly what docs/integrations.md shows
    settings = home / ".cline" / "data" / "settings" / "cline_mcp_settings.json"
    settings.parent.mkdir(parents=True)
    server_entry = {"command": "greenloop", "args": ["-C", str(repo), "mcp"], "timeout": 600}
    settings.write_text(json.dumps({"mcpServers": {"greenloop": server_entry}}))
    with ReplayServer(script, api="chat") as server:
        auth = (
            "auth",
            "-p",
            "openai",
            "-k",
            "sk-dummy",
            "-b",
            server.base_url,
            "-m",
            "replay-model",
        )
        cline(environ, repo, *auth)
        run = cline(environ, repo, "--json", PROMPT)
    requests = server.main_requests
    assert len(requests) == 4, run.stdout
    offered = {tool["function"]["name"] for tool in requests[0]["tools"]}
    assert {"greenloop__verify", "greenloop__detect", "greenloop__last_report"} <= offered
    first = tool_result(requests[1])
    assert first["verdict"] == "failed"
    assert "test_calc.py::test_add" in first["digest"]
    assert "-1 == 5" in first["digest"]
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    second = tool_result(requests[3])
    assert second["verdict"] == "green"
    assert second["counts"]["passed"] == 1
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert (result["type"], result["finishReason"], result["text"]) == (
        "run_result",
        "completed",
        "Green.",
    )

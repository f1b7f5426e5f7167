"""``GREENLOOP_HOOK_LOG`` (issue 36, the drift script): a hook call writes the shape of what the
host sent, its event and field names, and never a value."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from limits import hang

PY = sys.executable
SECRET = "sk-ant-" + "api03-notarealkeybutshapedlikeone0123456789"


def test_the_hook_log_keeps_field_names_and_never_a_value(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    payload = {
        "session_id": "s",
        "hook_event_name": "PostToolUse",
        "cwd": str(tmp_path),
        "tool_name": "Bash",
        "tool_input": {"command": f"API_KEY={SECRET} python -m pytest -q"},
        "tool_response": {
            "stdout": f"{SECRET}\n1 passed in 0.01s\n",
            "stderr": "",
            "interrupted": False,
        },
    }
    env = {"GREENLOOP_HOOK_LOG": str(logs), "PATH": "/usr/bin:/bin"}
    for argv in (["hook", "post-tool"], ["hook", "stop"]):
        subprocess.run(
            [PY, "-m", "greenloop", *argv], input=json.dumps(payload), env=env,
            capture_output=True, text=True, timeout=hang(120), check=False,
        )  # fmt: skip
    lines = (logs / "claude.jsonl").read_text().splitlines()
    shapes = [json.loads(line) for line in lines]
    assert [s["hook"] for s in shapes] == ["post-tool", "stop"]
    assert shapes[0]["event"] == "PostToolUse"
    assert "tool_response" in shapes[0]["fields"]
    assert shapes[0]["response"] == ["interrupted", "stderr", "stdout"]
    assert SECRET not in "".join(lines)
    assert "pytest" not in "".join(lines)

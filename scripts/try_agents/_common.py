"""Shared helpers for the try_agents reproduction scripts.

Each script starts a greenloop ReplayServer on 127.0.0.1, creates a throw-away
git repo and a throw-away HOME, runs one real agent CLI against the server and
checks the file on disk.  Locations of the CLIs can be overridden:

    AGENTCLIS_BIN  dir with claude/codex/gemini  (default /tmp/agentclis/node_modules/.bin)
    AIDER_BIN      aider executable               (default /tmp/aiderenv/bin/aider)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from greenloop.demo.script import Reply, ToolCall  # noqa: E402
from greenloop.demo.server import ReplayServer  # noqa: E402

__all__ = [
    "ReplayServer",
    "Reply",
    "ToolCall",
    "bin_path",
    "check",
    "fresh_env",
    "make_repo",
    "run",
]

AGENTCLIS_BIN = Path(os.environ.get("AGENTCLIS_BIN", "/tmp/agentclis/node_modules/.bin"))
AIDER_BIN = Path(os.environ.get("AIDER_BIN", "/tmp/aiderenv/bin/aider"))


def bin_path(name: str) -> str:
    if name == "aider":
        return str(AIDER_BIN)
    return str(AGENTCLIS_BIN / name)


def make_repo(files: dict[str, str]) -> Path:
    """A fresh git repo with one commit containing ``files``."""
    repo = Path(tempfile.mkdtemp(prefix="gl-repo-"))
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    return repo


def fresh_env(**extra: str) -> dict[str, str]:
    """Environment with a throw-away HOME and the CLI dirs on PATH."""
    home = tempfile.mkdtemp(prefix="gl-home-")
    keep = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "OPENAI_", "GEMINI_", "GOOGLE_", "CLAUDE", "CODEX_"))
    }
    env = dict(keep, HOME=home, XDG_CONFIG_HOME=f"{home}/.config", XDG_CACHE_HOME=f"{home}/.cache")
    env["PATH"] = f"{AGENTCLIS_BIN}:{AIDER_BIN.parent}:{env.get('PATH', '')}"
    env.update(extra)
    return env


def run(
    cmd: list[str], cwd: Path, env: dict[str, str], stdin: str | None = None, timeout: int = 180
) -> subprocess.CompletedProcess[str]:
    print("$", " ".join(cmd), flush=True)
    proc = subprocess.run(
        cmd,
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    print(f"  rc={proc.returncode}")
    tail = (proc.stdout[-1500:] + "\n--stderr--\n" + proc.stderr[-1500:]).strip()
    print("  " + tail.replace("\n", "\n  "))
    return proc


def check(label: str, ok: bool) -> bool:
    print(f"[{'PASS' if ok else 'FAIL'}] {label}", flush=True)
    return ok


def dump(path: str, requests: list[dict[str, Any]]) -> None:
    Path(path).write_text(json.dumps(requests, indent=1))

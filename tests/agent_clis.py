"""Where the real agent CLIs live for the tests, and a clean environment to run them in.

``scripts/install_agent_clis.sh`` installs them under ``$GREENLOOP_AGENT_CLIS``
(default ``/tmp/greenloop-agent-clis``). A missing CLI fails its test with the
command to run; ``GREENLOOP_SKIP_AGENT_CLIS=1`` turns that into a stated skip.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

PREFIX = Path(os.environ.get("GREENLOOP_AGENT_CLIS", "/tmp/greenloop-agent-clis"))
NODE_BIN = PREFIX / "node_modules" / ".bin"
AIDER_BIN = PREFIX / "aider-venv" / "bin"
BIN_DIRS = {
    "claude": NODE_BIN,
    "codex": NODE_BIN,
    "gemini": NODE_BIN,
    "cline": NODE_BIN,
    "copilot": NODE_BIN,
    "opencode": NODE_BIN,
    "aider": AIDER_BIN,
}

# Whatever the developer's shell has for these would point the CLI at a real service.
_FOREIGN = (
    "ANTHROPIC_",
    "OPENAI_",
    "GEMINI_",
    "GOOGLE_",
    "CLAUDE",
    "CODEX_",
    "AIDER_",
    "LITELLM_",
    "CLINE_",
    "COPILOT_",
    "GH_",
    "OPENHANDS_",
    "OH_",
    "LMNR_",
)


# What an earlier test of this worker may have left in its environment (greenloop's pytest plugin
# marks an in-process pytest session, Ray sets its own): the CLI's own test run must not see it
_SUITES_OWN = ("GREENLOOP_PYTEST_", "RAY_", "PYTEST_ADDOPTS", "PYTEST_PLUGINS")


def require_cli(name: str) -> Path:
    """The directory holding ``name``; fails (or skips, when asked to) if it is not installed."""
    bin_dir = BIN_DIRS[name]
    if shutil.which(name, path=str(bin_dir)):
        return bin_dir
    reason = f"`{name}` is not installed under {PREFIX}: run scripts/install_agent_clis.sh"
    if os.environ.get("GREENLOOP_SKIP_AGENT_CLIS") == "1":
        pytest.skip(f"GREENLOOP_SKIP_AGENT_CLIS=1 and {reason}")
    pytest.fail(reason)


OPENHANDS_PYTHON = PREFIX / "openhands-venv" / "bin" / "python"


def require_openhands_sdk() -> Path:
    """The interpreter of the OpenHands SDK's venv; fails (or skips, when asked to) without it."""
    if OPENHANDS_PYTHON.is_file() and any(
        (PREFIX / "openhands-venv" / "lib").glob("python3*/site-packages/openhands_sdk-*")
    ):
        return OPENHANDS_PYTHON
    reason = f"openhands-sdk is not installed under {PREFIX}: run scripts/install_agent_clis.sh"
    if os.environ.get("GREENLOOP_SKIP_AGENT_CLIS") == "1":
        pytest.skip(f"GREENLOOP_SKIP_AGENT_CLIS=1 and {reason}")
    pytest.fail(reason)


def clean_environ(home: Path, *path_first: Path, **extra: str) -> dict[str, str]:
    """os.environ without model/agent settings, with its own HOME and ``path_first`` on PATH."""
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(_FOREIGN + _SUITES_OWN)}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        # each CLI its own temporary folder: CLIs of tests running at once (xdist workers) keep
        # their cut outputs and state there, never in a /tmp they would share
        TMPDIR=str(home / "tmp"),
    )
    (home / "tmp").mkdir(exist_ok=True)
    env["PATH"] = os.pathsep.join([*map(str, path_first), env.get("PATH", "")])
    env.update(extra)
    return env

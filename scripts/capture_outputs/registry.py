"""Where cases run and land, the forced environment, ``Case`` and ``add``: the registry
every family module adds its cases to, in import order."""

from __future__ import annotations

import os
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
OUT_DIR = REPO / "tests" / "resources" / "outputs"
PROJECTS_DIR = Path(__file__).resolve().parent.parent / "capture_projects"
CAP_ROOT = Path(os.environ.get("GLCAP_ROOT", "/tmp/glcap"))
TOOLS = Path(os.environ.get("GLCAP_TOOLS", "/tmp/glcap-tools"))
VENV_BIN = TOOLS / "venv" / "bin"
NODE_MODULES = TOOLS / "node" / "node_modules"
NODE_BIN = NODE_MODULES / ".bin"
BARE_VENV = TOOLS / "bare-venv"

FORCED_ENV = {
    "NO_COLOR": "1",
    "CARGO_TERM_COLOR": "never",
    "MYPY_FORCE_TERMINAL_WIDTH": "2000",
    "PAGER": "cat",
    "TQDM_DISABLE": "1",
    "PIP_PROGRESS_BAR": "off",
    # determinism / no network beyond what is needed
    "GOPROXY": "off",
    "GOTOOLCHAIN": "local",
    "GOFLAGS": "",
    "npm_config_update_notifier": "false",
    "PYTHONDONTWRITEBYTECODE": "1",
    "LANG": "C.UTF-8",
}
DROPPED_ENV = {
    "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTHONPATH", "VIRTUAL_ENV", "COLUMNS",
    "LINES", "CI", "FORCE_COLOR", "CLICOLOR_FORCE", "NODE_OPTIONS", "RUSTFLAGS",
    "CARGO_TARGET_DIR", "MYPY_CACHE_DIR", "PYTHONSTARTUP", "PYTHONUNBUFFERED",
    "GITHUB_ACTIONS", "TF_BUILD", "JEST_WORKER_ID", "RUST_BACKTRACE", "RUST_LIB_BACKTRACE",
    "LC_ALL", "LC_MESSAGES", "LANGUAGE",
}

ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")


def D(s: str) -> str:
    """Dedent a file body written inline."""
    return textwrap.dedent(s).lstrip("\n")


@dataclass
class Case:
    tool: str
    name: str
    files: dict[str, str]
    argv: list[str] | str
    facts: dict[str, Any]
    requires: list[str]
    version_argv: list[str] | str
    timeout: float = 180.0
    setup: list[list[str] | str] = field(default_factory=list)
    link_node_modules: bool = False
    env: dict[str, str] = field(default_factory=dict)
    path_front: list[str] = field(default_factory=list)
    description: str = ""

    @property
    def cwd(self) -> Path:
        return CAP_ROOT / f"{self.tool}_{self.name}"


CASES: list[Case] = []


def at(files: dict[str, str], path: str, needle: str, nth: int = 1) -> str:
    """'path:LINE' of the nth line of files[path] containing needle."""
    seen = 0
    for i, line in enumerate(files[path].splitlines(), 1):
        if needle in line:
            seen += 1
            if seen == nth:
                return f"{path}:{i}"
    raise ValueError(f"{needle!r} not found in {path}")


def facts(failing_ids: list[str], error_type: str | None, message: str | None,
          frame: str | None, count_failed: int | None = None,
          killed: bool = False, counts: dict[str, int] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "failing_ids": failing_ids,
        "error_type": error_type,
        "message": message,
        "frame": frame,
        "count_failed": count_failed,
        "killed": killed,
    }
    if counts is not None:  # what the runner's summary must say: {passed, failed, skipped}
        out["counts"] = counts
    return out


def add(tool: str, name: str, files: dict[str, str], argv: list[str] | str,
        f: dict[str, Any], *, requires: list[str] | None = None,
        version: list[str] | str | None = None, **kw: Any) -> None:
    if requires is None:
        requires = [argv[0] if isinstance(argv, list) else argv.split()[0]]
    if version is None:
        version = [requires[0], "--version"]
    CASES.append(Case(tool, name, dict(files), argv, f, requires, version, **kw))

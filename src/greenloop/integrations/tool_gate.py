"""The first question ``hook post-tool`` asks, before greenloop sets up anything: is there nothing
to do? It runs on every shell call of the agent (issue 25), and for ``ls`` or ``git diff`` the
answer must cost little more than Python's start: ``json``, ``os`` and ``re`` only, no
dataclasses, no pathlib, nothing written (so nothing needs redacting).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping

MAX_INPUT = 16 * 1024 * 1024
"""Hook input bytes read at most; past it the output passes through with a one-line note."""
ENV_SWITCH = "GREENLOOP_TOOL_OUTPUT"
OFF_VALUES = frozenset({"0", "false", "no", "off"})
SHELL_TOOLS = frozenset({"Bash", "bash", "run_shell_command", "shell", "exec_command"})
# Any word that may start a verifier; a command with none of them is not one.
CANDIDATE = re.compile(
    r"(?<![\w.-])(?:pytest|py\.test|unittest|tox|nox|npm|pnpm|yarn|bun|vitest|jest|mocha|ava|"
    r"tap|tape|uvu|jasmine|bnt|node|go|cargo|cargo-nextest|tsc|vue-tsc|tsd|ruff|mypy|dmypy|"
    r"pyright|basedpyright|eslint|xo|prettier|flake8|black|make|gmake|just|rspec|rake|"
    r"runtests)(?![\w-])"
)


def read_input(stream: object) -> bytes | int:
    """The payload, or its size when it is over MAX_INPUT (the rest is drained, not kept)."""
    read = stream.read  # type: ignore[attr-defined]
    data: bytes = read(MAX_INPUT + 1)
    if len(data) <= MAX_INPUT:
        return data
    size = len(data)
    while chunk := read(1 << 20):
        size += len(chunk)
    return size


def switched_off(environ: Mapping[str, str]) -> bool:
    return environ.get(ENV_SWITCH, "").strip().lower() in OFF_VALUES


def nothing_to_do(raw: bytes | int, environ: Mapping[str, str] = os.environ) -> bool:
    """True only when the hook would answer nothing: bad input is never nothing (it is told)."""
    if switched_off(environ):
        return True
    if isinstance(raw, int):
        return False
    try:
        data = json.loads(raw)
    except ValueError:  # UnicodeDecodeError is one
        return False
    if not isinstance(data, dict):
        return False
    tool, tool_input = tool_of(data)
    if tool not in SHELL_TOOLS or not isinstance(tool_input, dict):
        return True
    command = tool_input.get("command")
    if not isinstance(command, str):
        return True
    if CANDIDATE.search(command) or "[greenloop: exit" in command:
        return False
    cwd = data.get("cwd")
    base = cwd if isinstance(cwd, str) and cwd else environ.get("CLAUDE_PROJECT_DIR", ".")
    return not configures_stages(base)


def tool_of(data: Mapping[str, object]) -> tuple[object, object]:
    """The tool's name and input: snake_case (Claude Code, Gemini CLI, Copilot CLI's Claude-format
    events) or camelCase (Copilot CLI's own ``toolName``, ``toolArgs``)."""
    if "toolName" in data:
        return data.get("toolName"), data.get("toolArgs")
    return data.get("tool_name"), data.get("tool_input")


def configures_stages(cwd: str) -> bool:
    """Whether a greenloop.toml, or a pyproject.toml with stages, is in cwd or above it (up to
    the repository's root): only then can a command that names no runner be a verifier."""
    path = os.path.abspath(cwd)
    while True:
        if os.path.isfile(os.path.join(path, "greenloop.toml")):
            return True
        if _names_stages(os.path.join(path, "pyproject.toml")):
            return True
        parent = os.path.dirname(path)
        if parent == path or os.path.exists(os.path.join(path, ".git")):
            return False
        path = parent


def _names_stages(pyproject: str) -> bool:
    try:
        with open(pyproject, "rb") as file:
            return b"tool.greenloop.stage" in file.read()
    except OSError:
        return False

"""The first question ``hook post-tool`` asks, before greenloop sets up anything: is there nothing
to do? It runs on every shell call of the agent (issue 25), and for ``ls`` or ``git diff`` the
answer must cost little more than Python's start: ``json``, ``os`` and ``re`` only, no
dataclasses, no pathlib, nothing written (so nothing needs redacting).
"""

from __future__ import annotations

import json
import os
import re
import sys
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


_RUN = re.compile(rb"""^[ \t]*run[ \t]*=[ \t]*(?:"((?:[^"\\\n]|\\.)*)"|'([^'\n]*)')""", re.M)
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


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
    base = (
        native_path(cwd) if isinstance(cwd, str) and cwd else environ.get("CLAUDE_PROJECT_DIR", ".")
    )
    return not may_run_a_stage(command, base)


def tool_of(data: Mapping[str, object]) -> tuple[object, object]:
    """The tool's name and input: snake_case (Claude Code, Gemini CLI, Copilot CLI's Claude-format
    events) or camelCase (Copilot CLI's own ``toolName``, ``toolArgs``)."""
    if "toolName" in data:
        return data.get("toolName"), data.get("toolArgs")
    return data.get("tool_name"), data.get("tool_input")


def may_run_a_stage(command: str, cwd: str) -> bool:
    """Whether ``command`` names the program of a stage the repository configures: only then can
    a command that names no runner be a verifier. Read with one regex from the files' bytes, so a
    repository with stages answers ``ls`` without loading its configuration."""
    if not configures_stages(cwd):
        return False
    words = stage_programs(cwd)
    return words is None or any(word in command for word in words)


def stage_programs(cwd: str) -> list[str] | None:
    """The first word of each configured stage's ``run`` (after ``NAME=value`` assignments);
    None where a file configures stages in a form this does not read (then every command is
    looked at)."""
    words: list[str] = []
    for text in _configuration_texts(cwd):
        runs = [
            (m.group(1) or m.group(2) or b"").decode(errors="replace") for m in _RUN.finditer(text)
        ]
        if not runs and b"stage" in text:
            return None
        for run in runs:
            program = next((w for w in run.split() if not _ASSIGNMENT.match(w)), "")
            if not program:
                return None
            words.append(program)
    return words


def _configuration_texts(cwd: str) -> list[bytes]:
    texts: list[bytes] = []
    path = os.path.abspath(cwd)
    while True:
        for name in ("greenloop.toml", "pyproject.toml"):
            text = _read(os.path.join(path, name))
            if text and (name == "greenloop.toml" or b"tool.greenloop.stage" in text):
                texts.append(text)
        parent = os.path.dirname(path)
        if parent == path or os.path.exists(os.path.join(path, ".git")):
            return texts
        path = parent


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as file:
            return file.read()
    except OSError:
        return b""


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


def native_path(path: str, platform: str = sys.platform) -> str:
    """``/c/Users/me`` -> ``C:/Users/me`` on Windows; any other path, or any other system: as is."""
    drive = re.match(r"/([A-Za-z])(?:/|$)", path)
    if platform != "win32" or drive is None:
        return path
    return f"{drive[1].upper()}:/{path[3:]}"

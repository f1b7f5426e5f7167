"""The program a command starts, and where it resolves from: for the pre-flight's messages and
``-v`` (process.py runs the command; ``shell_can_run`` there asks ``sh`` itself)."""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path


def executable_of(command: Sequence[str] | str) -> str:
    """The program a command starts: argv[0], or a shell string's first word after ``VAR=x``."""
    if isinstance(command, str):
        try:
            words = shlex.split(command)
        except ValueError:
            words = command.split()
        for word in words:
            name, eq, value = word.partition("=")
            if not (eq and name.isidentifier()):
                return word
            if "$(" in value or "`" in value:
                return ""  # a command substitution's words are not the program: sh will judge
        return ""
    return command[0] if command else ""


def resolve_executable(root: Path, word: str, environ: Mapping[str, str] = os.environ) -> str:
    """Where ``word`` resolves from ``root``, following symlinks; or why it does not."""
    if not word:
        return "no command"
    import shutil  # only for ``-v``: its import costs ~2 ms on every Stop hook otherwise

    found = str(root / word) if "/" in word else shutil.which(word, path=environ.get("PATH"))
    if found is None or not os.access(found, os.X_OK):
        return "not found on PATH" if "/" not in word else "not found"
    real = os.path.realpath(found)
    return found if real == found else f"{found} ({real})"

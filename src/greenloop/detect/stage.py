"""One verifier stage: what runs, where, and why it was chosen."""

from __future__ import annotations

import shlex
from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class Stage:
    """One verifier stage."""

    name: str
    command: tuple[str, ...] | str
    """An argv tuple, or a user's shell string (run with ``sh -c``)."""
    why: str
    """Why this stage was chosen, for ``greenloop detect``."""
    fix: bool = False
    timeout: float | None = None
    timeout_origin: str = ""
    """Who set the limit this stage runs under (``--timeout``, a config key); ``""``: the default."""
    cwd: str = ""
    """The folder it runs in, relative to the repository root (a monorepo's package); ``""``: the root."""
    package: str = ""
    """The workspace package it verifies (issue 29); ``""``: not a package's stage."""
    origin: str = ""
    """``PATH:LINE`` of the CI step it was taken from (issue 38); ``""``: not from CI."""

    @property
    def display(self) -> str:
        command = self.command if isinstance(self.command, str) else shlex.join(self.command)
        return f"cd {shlex.quote(self.cwd)} && {command}" if self.cwd else command

    @property
    def argv(self) -> tuple[str, ...]:
        return ("sh", "-c", self.command) if isinstance(self.command, str) else self.command

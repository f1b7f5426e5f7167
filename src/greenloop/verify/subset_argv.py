"""What every runner's narrowing shares (subset.py): the ``Subset`` it returns, a stage's argv,
and known-option scans over it."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, replace

from greenloop.detect.stages import Stage

_SHELL_OPS = re.compile(r"[|&;<>()$`\\*?\[\]{}~\n]")


@dataclass(frozen=True, slots=True, kw_only=True)
class Subset:
    """A stage narrowed to some tests."""

    stage: Stage
    env: tuple[tuple[str, str], ...] = ()
    """Extra environment for the run (the pytest plugin's selection)."""
    ids: tuple[str, ...]
    """The test ids selected."""
    files: tuple[str, ...] = ()
    """Whole test files selected (ones the last edit touched)."""


def words(stage: Stage) -> list[str] | None:
    """The stage as argv, or None when it is a shell string with more than one simple command."""
    if isinstance(stage.command, tuple):
        return list(stage.command)
    if _SHELL_OPS.search(stage.command):
        return None
    try:
        return shlex.split(stage.command)
    except ValueError:
        return None


def with_argv(stage: Stage, argv: list[str]) -> Stage:
    command: tuple[str, ...] | str = (
        shlex.join(argv) if isinstance(stage.command, str) else tuple(argv)
    )
    return replace(stage, command=command, fix=False)


def scan_options(
    args: Sequence[str], value: frozenset[str], boolean: frozenset[str]
) -> tuple[list[str], list[str]] | None:
    """``args`` split into known options and positionals; None on an option we don't know."""
    kept: list[str] = []
    positional: list[str] = []
    i = 0
    while i < len(args):
        arg, name = args[i], option_name(args[i])
        if arg == "--":
            positional += args[i + 1 :]
            break
        if not arg.startswith("-"):
            positional.append(arg)
            i += 1
        elif name in boolean:
            kept.append(arg)
            i += 1
        elif name in value and ("=" in arg or i + 1 < len(args)):
            step = 1 if "=" in arg else 2
            kept += args[i : i + step]
            i += step
        else:
            return None
    return kept, positional


def without_options(args: list[str], names: set[str], value: frozenset[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(args):
        step = 2 if option_name(args[i]) in value and "=" not in args[i] else 1
        if option_name(args[i]) not in names:
            out += args[i : i + step]
        i += step
    return out


def option_name(arg: str) -> str:
    return arg.split("=", 1)[0]

"""Short names for the agents a bench compares: a preset by its name, a command by its script.

``/usr/bin/python3 /tmp/x/oracle.py /tmp/x/answers`` reads as ``oracle.py`` in every table, chart
and progress line; two agents that would share a name get their position added (``fix.sh #2``).
"""

from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Sequence
from pathlib import PurePath

INTERPRETERS = frozenset({"python", "python3", "sh", "bash", "node", "ruby", "perl", "uv", "npx"})


def agent_names(specs: Sequence[str]) -> list[str]:
    """One short, distinct name per agent spec, in order."""
    names = [agent_name(spec) for spec in specs]
    seen = Counter(names)
    return [f"{n} #{i + 1}" if seen[n] > 1 else n for i, n in enumerate(names)]


def agent_name(spec: str) -> str:
    """A preset or ``openai:MODEL`` as given; a command by the basename of what it runs."""
    kind, colon, rest = spec.partition(":")
    if colon and kind in ("openai", "scripted") and " " not in kind:
        return f"scripted:{PurePath(rest).name}" if kind == "scripted" else spec
    try:
        words = shlex.split(spec)
    except ValueError:
        words = spec.split()
    if not words:
        return spec
    program = PurePath(words[0]).name
    if _interpreter(program):
        script = next((w for w in words[1:] if not w.startswith("-")), "")
        return PurePath(script).name if script else program
    return program


def _interpreter(program: str) -> bool:
    base = program.rstrip("0123456789.")
    return program in INTERPRETERS or base in INTERPRETERS

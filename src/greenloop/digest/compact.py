"""Make one line of tool output cheap to read: object addresses, long reprs and long lines elided."""

from __future__ import annotations

import re

LINE_CHARS = 160
"""A longer line keeps its head and tail, with a count of what was cut in between."""
STRING_CHARS = 60
"""A longer quoted string or bytes repr keeps its head and tail."""

# an object's address (`<Conn object at 0x7f…>`), not a value the test compares (`got 0x3fdf…`)
_ADDRESS = re.compile(r"(?<=\bat )0x[0-9a-fA-F]{6,}\b")
_LONG_STRING = re.compile(
    rf"""(?<![\w'"])b?(?:'[^'\n]{{{STRING_CHARS},}}'|"[^"\n]{{{STRING_CHARS},}}")"""
)


def compact(line: str, limit: int = LINE_CHARS) -> str:
    """Addresses as ``0x…``, long string reprs cut in the middle, then the line cut to ``limit``."""
    line = _ADDRESS.sub("0x…", line)
    if len(line) > limit:
        line = _LONG_STRING.sub(_shorten_string, line)
    return elide(line, limit)


def elide(line: str, limit: int = LINE_CHARS) -> str:
    """Head … tail with the number of characters cut: both ends of a repr say the most."""
    if len(line) <= limit + 24:  # the marker would cost about what it saves
        return line
    head = limit * 2 // 3
    tail = max(limit - head - 20, 10)
    return f"{line[:head]} …[{len(line) - head - tail} chars]… {line[-tail:]}"


def _shorten_string(m: re.Match[str]) -> str:
    text = m.group(0)
    prefix = "b" if text.startswith("b") else ""
    quote = text[len(prefix)]
    body = text[len(prefix) + 1 : -1]
    if len(body) <= STRING_CHARS:
        return text
    keep = STRING_CHARS // 2
    return f"{prefix}{quote}{body[:keep]}…[{len(body) - keep - 12} chars]…{body[-12:]}{quote}"

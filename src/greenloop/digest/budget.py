"""Fit the digest's sections to the token budget: drop optional ones from the end, then shorten."""

from __future__ import annotations

import math
from dataclasses import dataclass

DEFAULT_BUDGET = 2000
CHARS_PER_TOKEN = 3  # chars/4 under-counts tool output by up to 27 % (issue 3)


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


@dataclass(frozen=True, slots=True)
class Section:
    text: str
    keep: bool = False
    """Never dropped (header, first failure); only its long blocks are shortened."""
    note: bool = False
    """What the loop knows, not what the output says (progress, repeat, the last edit): kept
    when the output stands in for its digest."""


def fit_budget(sections: list[Section], max_chars: int) -> str:
    """Drop optional sections from the end, then shorten long blocks in the middle."""
    kept = list(sections)
    while _size(kept) > max_chars and any(not s.keep for s in kept):
        i = max(i for i, s in enumerate(kept) if not s.keep)
        excess = _size(kept) - max_chars
        shortened = shorten(kept[i].text, len(kept[i].text) - excess)
        if shortened:
            kept[i] = Section(shortened)
        else:
            kept.pop(i)
    while _size(kept) > max_chars and len(kept) > 1:
        i = max(range(1, len(kept)), key=lambda j: len(kept[j].text))
        excess = _size(kept) - max_chars
        shortened = shorten(kept[i].text, max(len(kept[i].text) - excess, 0))
        if shortened:
            kept[i] = Section(shortened, keep=True)
        else:
            kept.pop(i)
    text = "\n\n".join(s.text for s in kept)
    return text if len(text) <= max_chars else shorten(text, max_chars) or text[:max_chars]


def _size(sections: list[Section]) -> int:
    return sum(len(s.text) for s in sections) + 2 * max(0, len(sections) - 1)


def shorten(text: str, max_chars: int) -> str:
    """Keep the top and the bottom lines, with a count of what was elided in between."""
    if len(text) <= max_chars:
        return text
    if max_chars < 80:
        return ""
    lines = [line[: max_chars // 2] for line in text.splitlines()]
    head: list[str] = []
    tail: list[str] = []
    room = max_chars - 40
    lo, hi, take_head = 0, len(lines) - 1, True
    while lo <= hi:
        line = lines[lo] if take_head else lines[hi]
        if len(line) + 1 > room:
            break
        room -= len(line) + 1
        if take_head:
            head.append(line)
            lo += 1
        else:
            tail.append(line)
            hi -= 1
        take_head = not take_head
    elided = hi - lo + 1
    if elided <= 0:
        return "\n".join(lines)[:max_chars]
    return "\n".join([*head, f"[... {elided} lines elided ...]", *reversed(tail)])

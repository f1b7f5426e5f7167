"""Long compared values cut around their first difference, as the runners' own diffs show them.

A Go ``%#v`` of a struct or a Rust ``assert_eq!`` of a long value prints expected and actual as
one line each, alike for hundreds of characters. Cut at a fixed length or in the middle, both
lines read the same and the one part that differs is gone; kept around the first character
where they differ, each keeps what the reader needs: that part, with ``…`` for what was left out.
"""

from __future__ import annotations

import re

WINDOW = 80
"""Characters of each value kept when it is longer: a third before the first difference."""

# `left: …` / `right: …` (Rust), `Expected: …` / `Received: …` (jest), `expected: …` / `actual: …`
# (tape), `got: …` / `want: …` (Go); a leading diff sign is allowed
_LABELLED = re.compile(
    r"^(?P<head>\s*(?:[-+]\s*)?(?P<label>expected|received|actual|got|left|right|want)"
    r"(?: ?value)? ?[:=]\s*)(?P<value>.*)$",
    re.I,
)
_PARTNERS = {
    "expected": ("received", "actual", "got"),
    "received": ("expected",),
    "actual": ("expected",),
    "left": ("right",),
    "right": ("left",),
    "got": ("want", "expected"),
    "want": ("got",),
}
# `expected: A, got: B`, `got A, want B` inside one message line (Go's t.Errorf)
_INLINE = (("expected", "got"), ("want", "got"), ("got", "want"), ("expected", "actual"))


def first_difference(a: str, b: str) -> int:
    """The index of the first character where ``a`` and ``b`` differ (the shorter's length when
    one starts the other)."""
    n = min(len(a), len(b))
    lo, hi = 0, n
    while lo < hi:  # bisect on equal prefixes: linear in the values, not per character in Python
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def cut_pair(a: str, b: str, window: int = WINDOW) -> tuple[str, str]:
    """Both values kept around their first difference when either is longer than ``window``."""
    if len(a) <= window and len(b) <= window:
        return a, b
    start = max(first_difference(a, b) - window // 3, 0)
    return _window(a, start, window), _window(b, start, window)


def _window(value: str, start: int, window: int) -> str:
    if len(value) <= window:
        return value
    start = min(start, max(len(value) - window, 0))
    head = "…" if start else ""
    tail = "…" if start + window < len(value) else ""
    return f"{head}{value[start : start + window]}{tail}"


def cut_pairs(lines: list[str], window: int = WINDOW) -> list[str]:
    """Detail lines with each long labelled pair (``left:``/``right:``, ``Expected:``/
    ``Received:``, ``expected:``/``actual:``, ``got:``/``want:``) cut around its first difference."""
    out = list(lines)
    labelled = [(i, m) for i, line in enumerate(lines) if (m := _LABELLED.match(line))]
    used: set[int] = set()
    for n, (i, m) in enumerate(labelled):
        if i in used:
            continue
        partners = _PARTNERS[m["label"].lower()]
        other = next(
            ((j, o) for j, o in labelled[n + 1 : n + 4] if o["label"].lower() in partners), None
        )
        if other is None:
            continue
        j, o = other
        used.update((i, j))
        a, b = cut_pair(m["value"], o["value"], window)
        out[i], out[j] = m["head"] + a, o["head"] + b
    return out


def cut_inline(message: str, window: int = WINDOW, budget: int = 0) -> str:
    """A message that states both values (``Decode() expected: A, got: B``) with each long value
    cut around its first difference; any other message unchanged. With a ``budget`` the whole
    line fits it where it can: the two values share what the words around them leave."""
    if len(message) <= max(2 * window, budget):
        return message
    lower = message.lower()
    for first, second in _INLINE:
        at = lower.find(first)
        then = lower.rfind(second)
        if at < 0 or then <= at:
            continue
        a_start = _value_start(message, at + len(first))
        b_start = _value_start(message, then + len(second))
        a_end = _value_end(message, a_start, then)
        if budget:
            words = len(message) - (a_end - a_start) - (len(message) - b_start) + 4
            window = min(window, max((budget - words) // 2, 16))
        a, b = cut_pair(message[a_start:a_end], message[b_start:], window)
        return message[:a_start] + a + message[a_end:b_start] + b
    return message


def _value_start(message: str, at: int) -> int:
    """After a label: its ``:`` or ``=`` and the spaces."""
    while at < len(message) and message[at] in ":= \t":
        at += 1
    return at


def _value_end(message: str, start: int, label: int) -> int:
    """Before the next label: the ``, `` or `` but `` between the two values."""
    end = label
    while end > start and message[end - 1] in " ,;:\t":
        end -= 1
    for word in (" but", " and"):
        if message[start:end].endswith(word):
            end -= len(word)
    while end > start and message[end - 1] in " ,;\t":
        end -= 1
    return end

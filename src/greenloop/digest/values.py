"""What a failure compared, when the tool printed it apart from the message, and which failure is
the direct one (issue 26): two failures with one message can still differ in what they got."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from greenloop.digest.anchor import EditAnchor
from greenloop.digest.compact import compact
from greenloop.digest.frames import is_project, relative
from greenloop.parsers.model import Failure, Kind
from greenloop.parsers.values_cut import cut_pair

VALUE_CHARS = 60
# `Expected: filter(None__exact=(20, 30))` (mock), `Received: 3` (jest), `actual: 'b'` (tape),
# `left: 0` (cargo), `got: 1` / `want: 2` (go); a leading diff sign is allowed
_LABELLED = re.compile(
    r"^\s*+(?:[-+]\s*+)?(expected|received|actual|got|left|right|want)\s*+(?:value\s*+)?[:=]\s*(.*)$",
    re.I,
)
_FALSY = "The expression evaluated to a falsy value"
_ASSERT_CALL = re.compile(r"^(?:[\w$.]+\.)?(?:assert|ok)\w*(?:\.\w+)?\(")
_UVU = re.compile(r"^\s*(?:\+\+|--)(.*?)\s+\((Expected|Actual)\)\s*$")  # ++true (Expected)
_WORDS = re.compile(r"(?:[A-Za-z_]\w*[:,]?\s+)+")
_OPENING = {"[", "{", "(", "[{"}
_BLOCK = {"", "|", "|-", ">", ">-"}  # the value is on the next, indented line (doctest, TAP YAML)
# a test file: tests/, test/, spec/, __tests__/, test_x.py, x_test.go, x.test.js, x.spec.ts, conftest
_TEST_FILE = re.compile(
    r"(?:^|/)(?:tests?|testing|spec|__tests__)/|(?:^|/)test_[^/]*$|_test\.\w+$"
    r"|\.(?:test|spec)\.\w+$|(?:^|/)conftest\.py$"
)


def compared(f: Failure) -> tuple[str, ...]:
    """``("Expected: X", "Actual: Y")`` as the detail prints them; () when it prints none. Two
    long values are cut around where they first differ, so the part that differs stays."""
    asserted = _asserted(f)
    if asserted:  # `false` for `true` says nothing the message does not: the expression does
        return (f"falsy: {compact(asserted, VALUE_CHARS)}",)
    found = _compared(f)
    if len(found) >= 2:
        (a_label, a), (b_label, b) = found[0], found[1]
        a, b = cut_pair(a, b, VALUE_CHARS)
        found = [(a_label, a), (b_label, b), *found[2:]]
    return tuple(f"{label}: {compact(value, VALUE_CHARS)}" for label, value in found)[:3]


def _asserted(f: Failure) -> str:
    """The expression of node's ``assert(expr)``/``assert.ok(expr)``, whose message is the same
    for every expression: what tells one such failure from another."""
    if not f.message.startswith(_FALSY):
        return ""
    shown = next((d.strip() for d in f.detail if d.strip()), "")
    return shown if _ASSERT_CALL.match(shown) else ""


def _compared(f: Failure) -> list[tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    lines = f.detail
    for i, line in enumerate(lines):
        uvu = _UVU.match(line)
        if uvu:
            out.setdefault(uvu[2].lower(), (uvu[2], uvu[1].strip()))
            continue
        m = _LABELLED.match(line)
        if not m or m[1].lower() in out:
            continue
        value = m[2].strip()
        if value in _BLOCK:
            following = lines[i + 1] if i + 1 < len(lines) else ""
            value = following.strip() if following[:1].isspace() else ""
        if value and value not in _OPENING:  # `expected: [` says nothing until its next lines
            out[m[1].lower()] = (m[1], value)
    return list(out.values())


def values_note(f: Failure) -> str:
    """The compared values the message does not already say, ``, ``-joined ("" when none)."""
    return ", ".join(v for v in compared(f) if not states(f.message, v.partition(": ")[2]))


def states(message: str, value: str) -> bool:
    """Whether ``message`` says ``value`` as a whole (``expected 10`` says ``10``, not ``1``; ``to
    be strictly equal`` does not say ``b``), not merely holds its characters."""
    if not value:
        return True  # nothing to add
    at = message.find(value)
    while at >= 0:
        end = at + len(value)
        before = message[at - 1] if at else " "
        after = message[end] if end < len(message) else " "
        if not _joins(before, value[0]) and not _joins(value[-1], after):
            return True
        at = message.find(value, at + 1)
    return False


def _joins(a: str, b: str) -> bool:
    """Two characters side by side that read as one token (a word, a number: ``1`` in ``10``)."""
    return (a.isalnum() or a in "_.") and (b.isalnum() or b in "_.")


def is_test_file(path: str) -> bool:
    return _TEST_FILE.search(path) is not None


def is_direct(f: Failure, root: Path, anchor: EditAnchor | None = None) -> bool:
    """A test failure with a project frame in the edited files (``anchor``), else in the code
    under test (a project file that is no test file): it names the bug, where a test's own
    assertion only shows what came out."""
    if f.kind is not Kind.TEST:
        return False
    own = [relative(fr.file, root) for fr in f.frames if is_project(fr.file, root)]
    if anchor is not None:
        return any(anchor.touches(path, None) for path in own)
    return any(not is_test_file(path) for path in own)


def direct_ids(
    failures: Sequence[Failure], root: Path, anchor: EditAnchor | None = None
) -> frozenset[str]:
    """The ids of the direct test failures: by the last edit's files when any failure has a
    frame there, else by the code under test."""
    for by in (anchor, None) if anchor is not None and anchor.files else (None,):
        ids = frozenset(f.id for f in failures if is_direct(f, root, by))
        if ids:
            return ids
    return frozenset()


def common_head(first: str, other: str) -> int:
    """How many leading characters of ``other`` are words it shares with ``first`` (``assert ``,
    ``Unknown string format: ``), never a part of a value; 0 under 5."""
    n = 0
    for a, b in zip(first, other, strict=False):
        if a != b:
            break
        n += 1
    words = _WORDS.match(other[:n])
    return words.end() if words and words.end() >= 5 else 0


def distinct(items: Sequence[Failure]) -> list[Failure]:
    """One failure per distinct (message, compared values), in run order."""
    seen: dict[tuple[str, tuple[str, ...]], Failure] = {}
    for f in items:
        seen.setdefault((f.message, compared(f)), f)
    return list(seen.values())

"""The failures after the first: grouped, so many alike cost one line, not many."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from greenloop.digest.compact import compact
from greenloop.digest.frames import named_function, project_frame, relative
from greenloop.digest.values import common_head, compared, distinct, values_note
from greenloop.parsers.model import Failure, Kind
from greenloop.parsers.values_cut import cut_inline

MAX_LINES = 4
"""Shapes shown one line each; the rest are counted."""
MAX_PROBLEM_LINES = 12
"""Lint and type problems are short and each needs its own fix: more of them are listed."""
MESSAGE_CHARS = 90
PAIRS_CHARS = 140
PAIR_CHARS = 50
"""A group's distinct messages and values, `` | ``-joined up to this, then counted."""
INLINE_WINDOW = 40
"""Each of two values a message states (``expected: A, got: B``): kept around where they differ,
the line within MESSAGE_CHARS where the words around them leave room."""
TIMES = "\N{MULTIPLICATION SIGN}"
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


def shared_location(failures: tuple[Failure, ...], root: Path) -> str:
    """When most failures end in the same project line, say so: one root cause is likely."""
    spot = common_spot(failures, root)
    if spot is None:
        return ""
    where, function, count = spot
    if function == f" in {named_function(failures[0])}":  # the first id names it
        function = ""
    return (
        f"{count} of {len(failures)} failures end at {where}{function}: one root cause is likely."
    )


def common_spot(failures: Sequence[Failure], root: Path) -> tuple[str, str, int] | None:
    """(``path:line``, `` in func``, count) where most failures end, if at least 3 and half do."""
    if len(failures) < 3:
        return None
    spots: dict[tuple[str, str], int] = {}
    for f in failures:
        frame = project_frame(f, root)
        if frame is not None and frame.line:
            key = (
                f"{relative(frame.file, root)}:{frame.line}",
                f" in {frame.function}" if frame.function else "",
            )
            spots[key] = spots.get(key, 0) + 1
    if not spots:
        return None
    (where, function), count = max(spots.items(), key=lambda kv: kv[1])
    if count < 3 or count * 2 < len(failures):
        return None
    return where, function, count


def render_others(
    failures: Sequence[Failure], root: Path, known: str = "", direct: frozenset[str] = frozenset()
) -> str:
    """The failures after the first, one line per shape (same error and place; only the id differs).

    ``known`` is the ``path:line`` already named above, and the first failure's error is shown
    above: neither is repeated on every line. The groups holding a ``direct`` failure (a frame in
    the edited code or the code under test) come first: never hidden behind indirect ones.
    """
    others = failures[1:]
    shapes: dict[tuple[str, ...], list[Failure]] = {}
    for f in others:
        shapes.setdefault(_shape(f, root), []).append(f)
    title = "OTHER FAILURES" if others[0].kind is Kind.TEST else "OTHER PROBLEMS"
    lines = [f"{title} ({len(others)}):"]
    # the direct ones, then the biggest shapes first (stable: run order among equals): they are
    # most of what failed
    groups = sorted(
        shapes.values(), key=lambda items: (not any(f.id in direct for f in items), -len(items))
    )
    first = failures[0]
    shown = MAX_LINES if others[0].kind is Kind.TEST else MAX_PROBLEM_LINES
    lines += [f"  {_group_line(items, root, known, first)}" for items in groups[:shown]]
    hidden = groups[shown:]
    if hidden:
        count = sum(len(items) for items in hidden)
        files = {_file_of(f) for items in hidden for f in items}
        where = f" in {len(files)} file{'s' * (len(files) != 1)}" if "" not in files else ""
        lines.append(f"  +{count} more{where}{_same_type(hidden)}")
    return "\n".join(lines)


def _shape(f: Failure, root: Path) -> tuple[str, ...]:
    if f.kind is Kind.BUILD:  # collection errors: many test files failing on one import
        return (f.file, str(f.line), f.error_type, f.message)
    if f.kind is not Kind.TEST:
        return (f.id,)
    frame = project_frame(f, root)
    where = f"{frame.file}:{frame.line}" if frame else ""
    # parametrized cases of one test failing at one line are one shape, whatever values they print
    message = "" if "[" in f.id and where else _ADDRESS.sub("0x?", f.message)[:200]
    return (_split_id(f.id)[0], _test_name(f.id), f.error_type, message, where)


def _error(f: Failure) -> str:
    error_type = f.error_type.rpartition(".")[2] if f.kind is Kind.TEST else f.error_type
    return ": ".join(p for p in (error_type, f.message) if p)


def _group_line(items: list[Failure], root: Path, known: str, first: Failure) -> str:
    f = items[0]
    what = _what(items, first)
    if f.kind is not Kind.TEST:
        code = f"[{f.code}] " if f.code and f.code not in what else ""
        count = f" {TIMES}{len(items)} ({_names(items)})" if len(items) > 1 else ""
        return f"{_location(f, root)} {code}{what}{count}".rstrip()
    frame = project_frame(f, root)
    spot = f"{relative(frame.file, root)}:{frame.line}" if frame and frame.line else ""
    at = f" (at {spot})" if spot and spot != known else ""
    if at and frame and _in_file(f.id, relative(frame.file, root)):  # the id names the file
        at = f" (line {frame.line})"
    name = f.id if len(items) == 1 else compress_ids([g.id for g in items])
    return f"{name} — {what}{at}" if what else f"{name}{at}"


def _what(items: list[Failure], first: Failure) -> str:
    """The group's error, each distinct message and compared values once; ``same <Type>`` only
    when every one is the first failure's (shown above) to the value."""
    f = items[0]
    pairs = distinct(items)
    same = [(first.message, compared(first))] == [(g.message, compared(g)) for g in pairs]
    if f.kind in (Kind.TEST, Kind.BUILD) and _error(f) == _error(first) and same:
        return f"same {f.error_type.rpartition('.')[2] or 'error'}"
    error_type = f.error_type.rpartition(".")[2] if f.kind is Kind.TEST else f.error_type
    said = [_said(g, first) for g in pairs]
    head = ": ".join(p for p in (error_type, said[0]) if p)
    kept = compact(head, MESSAGE_CHARS)
    # what the later ones share with the first is said once: `assert '-1st' == '-1th' | …'-2nd' …`
    rest = [compact(s[common_head(said[0], s) :], PAIR_CHARS) for s in said[1:]]
    rest = [f"…{s}" if s != t else s for s, t in zip(rest, said[1:], strict=True)]
    for n, s in enumerate(rest):
        if len(kept) + 3 + len(s) > PAIRS_CHARS:
            return f"{kept} | +{len(rest) - n} more"
        kept += f" | {s}"
    return kept


def _said(f: Failure, first: Failure) -> str:
    """The message and the compared values it does not already say; the message alone is dropped
    when it is the first failure's and the values differ (``expected call not found.``)."""
    note = values_note(f)
    message = cut_inline(f.message, INLINE_WINDOW, MESSAGE_CHARS)
    if not note:
        return message
    if f.message == first.message:
        return note
    return f"{message} ({note})" if message else note


def _in_file(test_id: str, path: str) -> bool:
    """Whether a test id spells out the file (``tests/t.py::test_x``): its line number is enough.
    unittest's dotted ``tests.t.Case.test_x`` does not: the path is kept."""
    return "::" in test_id and test_id.partition("::")[0] == path


def compress_ids(ids: Sequence[str]) -> str:
    """``file::Class::test[…] xN``, or ``Class::test[…] xN in K files`` when the files differ."""
    parts = [_split_id(i) for i in ids]
    files = {p[0] for p in parts}
    classes = {p[1] for p in parts}
    params = "[…]" if any(p[3] for p in parts) else ""
    cls = f"{classes.pop()}::" if len(classes) == 1 and "" not in classes else ""
    if len(classes) > 1:
        cls = "…::"
    name = f"{cls}{parts[0][2]}{params} {TIMES}{len(ids)}"
    if len(files) == 1:
        return f"{parts[0][0]}::{name}"
    return f"{name} in {len(files)} files"


def _split_id(node_id: str) -> tuple[str, str, str, str]:
    """(file, class path, function, params) of a pytest node id."""
    path, _, params = node_id.partition("[")
    file, _, rest = path.partition("::")
    cls, _, func = rest.rpartition("::")
    return file, cls, func.strip(), params


def _test_name(node_id: str) -> str:
    return _split_id(node_id)[2] or node_id


def _location(f: Failure, root: Path) -> str:
    if not f.file:
        return f.id
    loc = relative(f.file, root) + (f":{f.line}" if f.line else "")
    return loc + (f":{f.column}" if f.line and f.column else "")


def _file_of(f: Failure) -> str:
    """A pytest id's file, else the failure's own file ("" when unknown: a JS title is no file)."""
    return f.id.partition("::")[0] if f.kind is Kind.TEST and "::" in f.id else f.file


def _same_type(groups: list[list[Failure]]) -> str:
    kinds = {f.error_type or f.code for items in groups for f in items}
    return f", all {kinds.pop()}" if len(kinds) == 1 and "" not in kinds else ""


def _names(items: list[Failure]) -> str:
    ids = [f.id for f in items]
    return ", ".join(ids[:2]) + (f", +{len(ids) - 2} more" if len(ids) > 2 else "")

"""The first failure in full: what failed, the project's call chain, and the assertion's explanation."""

from __future__ import annotations

import re
from pathlib import Path

from greenloop.digest.compact import LINE_CHARS, compact
from greenloop.digest.frames import describe_frame, named_function, project_chain, relative
from greenloop.parsers.model import Failure, Kind

MAX_DETAIL = 8
MESSAGE_CHARS = 240
"""The first failure's message line says what broke: it gets more room than other lines."""
# pytest's assertion explanations: what differs, said in one line each (issue 11: always kept)
_EXPLANATION = re.compile(
    r"^\s*(?:At index \d+ diff|Left contains|Right contains|Differing items|Differing attributes"
    r"|Omitting \d+ identical|Full diff|Extra items|Matching attributes|Drill down|Expected|Got)\b"
)


def render_first(f: Failure, root: Path) -> str:
    label = "FIRST FAILING TEST" if f.kind is Kind.TEST else "FIRST ERROR"
    if f.phase == "teardown":  # the test ran; a fixture's clean-up after it failed
        label = "FIRST ERROR, IN TEARDOWN OF"
    lines = [f"{label}: {f.id}"]
    detail = detail_lines(f.detail)
    # a doctest's message is its Expected/Got block, shown below as the tool printed it
    message = "" if _said_in(f.message, detail) else f.message
    what = ": ".join(p for p in (f.error_type, message) if p)
    if f.code and f.code not in what and f.code not in f.id:
        what = f"[{f.code}] {what}"
    if what:
        said = what.splitlines()[:MAX_DETAIL]
        lines += [
            f"  {compact(line, MESSAGE_CHARS if i == 0 else LINE_CHARS)}"
            for i, line in enumerate(said)
        ]
    lines += _chain(f, root)
    lines += ["  " + d for d in detail]
    return "\n".join(lines)


def _said_in(message: str, detail: list[str]) -> bool:
    """Whether the detail shown says the whole message, word for word (over several lines)."""
    words = message.split()
    if len(words) < 3:
        return False
    shown = " ".join(" ".join(detail).split())
    return f" {' '.join(words)} " in f" {shown} "


def _chain(f: Failure, root: Path) -> list[str]:
    frames, skipped = project_chain(f, root)
    if not frames:
        if f.file and f.kind is not Kind.TEST and relative(f.file, root) not in f.id:
            col = f":{f.column}" if f.column else ""
            return [f"  at {relative(f.file, root)}:{f.line or '?'}{col}"]
        return []
    named = named_function(f)
    lines = [f"  at {compact(describe_frame(frames[0], root, named))}"]
    lines += [f"  from {compact(describe_frame(frame, root, named))}" for frame in frames[1:-1]]
    if len(frames) > 1:
        above = f"(+{skipped} frames) " if skipped else ""
        lines.append(f"  from {above}{compact(describe_frame(frames[-1], root, named))}")
    return lines


def detail_lines(detail: tuple[str, ...]) -> list[str]:
    """The first lines of the detail, then only the explanation lines, with a count of the rest."""
    kept: list[str] = []
    dropped = follow = 0
    last = -1
    for i, line in enumerate(detail):
        if _EXPLANATION.match(line):
            follow = 2  # the value under "Expected:" / "Got:" is the point of the line
        elif follow and line[:1].isspace():
            follow -= 1
        else:
            follow = 0
        if len(kept) < MAX_DETAIL or _EXPLANATION.match(line) or follow:
            kept.append(compact(line))
        else:
            dropped, last = dropped + 1, i
    if dropped == 1 and last == len(detail) - 1:  # no dearer than saying it was left out
        return [*kept, compact(detail[last])]
    return [*kept, f"[… {dropped} more lines]"] if dropped else kept

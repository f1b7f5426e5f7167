"""The failures after the first: grouped, so many alike cost one line, not many."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from greenloop.digest.frames import project_frame, relative
from greenloop.parsers.model import Failure, Kind

MAX_GROUPS = 5
PER_GROUP = 4


def shared_location(failures: tuple[Failure, ...], root: Path) -> str:
    """When most failures end in the same project line, say so: one root cause is likely."""
    if len(failures) < 3:
        return ""
    spots: dict[str, int] = {}
    for f in failures:
        frame = project_frame(f, root)
        if frame is not None and frame.line:
            key = f"{relative(frame.file, root)}:{frame.line}" + (
                f" in {frame.function}" if frame.function else ""
            )
            spots[key] = spots.get(key, 0) + 1
    if not spots:
        return ""
    where, count = max(spots.items(), key=lambda kv: kv[1])
    if count < 3 or count * 2 < len(failures):
        return ""
    return f"{count} of {len(failures)} failures end at {where}: one root cause is likely."


def render_others(others: Sequence[Failure], root: Path) -> str:
    groups: dict[str, list[Failure]] = {}
    for f in others:
        groups.setdefault(_group_key(f), []).append(f)
    title = "OTHER FAILURES" if others[0].kind is Kind.TEST else "OTHER PROBLEMS"
    lines = [f"{title} ({len(others)}):"]
    for key, items in list(groups.items())[:MAX_GROUPS]:
        lines.append(f"  {key}:")
        lines += [f"    {_one_line(f, root)}" for f in items[:PER_GROUP]]
        if len(items) > PER_GROUP:
            kinds = {f.error_type for f in items[PER_GROUP:] if f.error_type}
            same = f", all {kinds.pop()}" if len(kinds) == 1 else ""
            lines.append(f"    +{len(items) - PER_GROUP} more here{same}")
    hidden = list(groups.items())[MAX_GROUPS:]
    if hidden:
        count = sum(len(v) for _, v in hidden)
        lines.append(f"  +{count} more in {len(hidden)} other file(s)")
    return "\n".join(lines)


def _group_key(f: Failure) -> str:
    if f.kind is Kind.TEST and "::" in f.id:
        return f.id.split("::", 1)[0]
    return f.file or "(no file)"


def _one_line(f: Failure, root: Path) -> str:
    name = f.id.split("::", 1)[1] if f.kind is Kind.TEST and "::" in f.id else f.id
    if f.kind is not Kind.TEST and f.line:
        name = f"line {f.line}" + (f":{f.column}" if f.column else "")
    what = ": ".join(p for p in (f.error_type, f.message) if p)
    code = f" [{f.code}]" if f.code and f.code not in what else ""
    frame = project_frame(f, root) if f.kind is Kind.TEST else None
    at = f" (at {relative(frame.file, root)}:{frame.line})" if frame and frame.line else ""
    line = f"{name}{code} — {what}" if what else name
    return line[: 240 - len(at)] + at

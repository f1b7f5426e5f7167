"""The last edit, from a unified diff: which files and line ranges it touched (seed OP-2)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_FILE = re.compile(r"^\+\+\+ (?:b/)?(.+?)\s*$")
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
MAX_FILES = 6


@dataclass(frozen=True, slots=True, kw_only=True)
class EditAnchor:
    files: tuple[tuple[str, tuple[tuple[int, int], ...]], ...]
    """(path, ((first, last) line ranges in the new file)) per changed file."""

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(path for path, _ in self.files)

    def touches(self, path: str, line: int | None) -> bool:
        for changed, ranges in self.files:
            if changed == path or path.endswith("/" + changed):
                return line is None or any(a - 1 <= line <= b + 1 for a, b in ranges)
        return False

    def describe(self, location: tuple[str, int | None] | None) -> str:
        shown = [_describe_file(p, r) for p, r in self.files[:MAX_FILES]]
        more = (
            f" (+{len(self.files) - MAX_FILES} more files)" if len(self.files) > MAX_FILES else ""
        )
        text = f"YOUR LAST EDIT touched {', '.join(shown)}{more}."
        if location is None:
            return text
        path, line = location
        where = f"{path}:{line}" if line else path
        if self.touches(path, line) and line is not None:
            return text + f" The failure at {where} lies inside that change."
        if self.touches(path, None):
            return (
                text
                + f" The failure at {where} is in a file you changed, outside the changed lines."
            )
        return text + f" The failure at {where} is in a file you did not change."


def _describe_file(path: str, ranges: tuple[tuple[int, int], ...]) -> str:
    if not ranges:
        return path
    spans = [f"{a}-{b}" if b > a else f"{a}" for a, b in ranges[:3]]
    return f"{path}:{','.join(spans)}" + ("…" if len(ranges) > 3 else "")


def parse_diff(diff: str) -> EditAnchor | None:
    files: dict[str, list[tuple[int, int]]] = {}
    current: str | None = None
    for line in diff.splitlines():
        m = _FILE.match(line)
        if m:
            current = None if m.group(1) == "/dev/null" else m.group(1)
            if current is not None:
                files.setdefault(current, [])
            continue
        h = _HUNK.match(line)
        if h and current is not None:
            start, count = int(h.group(1)), int(h.group(2) or 1)
            files[current].append((start, start + max(count, 1) - 1))
    if not files:
        return None
    return EditAnchor(files=tuple((p, tuple(r)) for p, r in files.items()))

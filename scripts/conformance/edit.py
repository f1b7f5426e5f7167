"""One line's mutation, the value every site finder returns (mutate.py for Python, clike.py for
JS/TS, Go and Rust) and capture.py commits."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class Edit:
    line: int
    before: str
    after: str

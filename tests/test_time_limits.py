"""The suite's own rule (issue 37): a wall-clock limit in a test bounds a hang and is scaled by
how busy the machine is (tests/limits.py), never a fixed number of seconds a loaded CI can pass."""

from __future__ import annotations

import re
from pathlib import Path

from limits import MAX_FACTOR, busy_factor, hang

TESTS = Path(__file__).parent
# `timeout=120` given to a process, a join or a wait, or a deadline of `monotonic() + 60`
FIXED = re.compile(r"\btimeout=(\d+(?:\.\d+)?)[,)\s]|monotonic\(\) \+ (\d+(?:\.\d+)?)\b")
# a limit greenloop itself is given (a stage's, a cache key's): what is under test, not a guard
GIVEN = re.compile(r"Config\(|StageSpec\(|compute_key\(|run_cascade_parallel\(|setdefault\(")
SCALED = re.compile(r"^\s*#|\bwait_for\(")  # a comment; a helper that scales its own limit


def test_no_test_waits_a_fixed_30_seconds_or_more() -> None:
    fixed = []
    for path in sorted(TESTS.glob("*.py")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            for m in FIXED.finditer(line):
                seconds = float(m.group(1) or m.group(2))
                if seconds >= 30 and not GIVEN.search(line) and not SCALED.search(line):
                    fixed.append(f"{path.name}:{n}: {line.strip()}")
    assert fixed == []


def test_a_hang_guard_grows_with_the_load_and_is_bounded() -> None:
    factor = busy_factor()
    assert 1.0 <= factor <= MAX_FACTOR
    assert hang(60) == 60 * factor

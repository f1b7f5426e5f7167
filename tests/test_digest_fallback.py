"""The generic fallback digest (no parser knows the tool) on REAL process output (issue 10).

It keeps the real end of the output (the summary, the error count), lines without their padding,
and the window around the first failure marker, never a blind tail.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from limits import hang

PADDED = """
import sys
for i in range(1, 30001):  # a type-test runner pads every line to 545 columns
    print(f"line {i} of the type tests".ljust(545))
print("Found 7 errors".ljust(545))
sys.exit(1)
"""
FAILURE_FIRST = """
import sys
for i in range(1, 60):
    print(f"ok {i} - case {i}")
print("not ok 60 - parses the header")
print("  expected: 'a'")
print("  actual:   'b'")
for i in range(61, 400):
    print(f"ok {i} - case {i}")
print("# 1 failed, 398 passed")
sys.exit(1)
"""


def _check(tmp_path: Path, script: str) -> dict[str, Any]:
    (tmp_path / "tool.py").write_text(script)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    argv = [sys.executable, "-m", "greenloop", "check", "--format", "json", "--"]
    out = subprocess.run(
        [*argv, sys.executable, "tool.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=hang(120),
        check=False,
    )
    assert out.returncode == 1, out.stderr
    data: dict[str, Any] = json.loads(out.stdout)
    return data


def test_fallback_digest_keeps_the_real_end_of_a_capped_padded_output(tmp_path: Path) -> None:
    data = _check(tmp_path, PADDED)
    digest = data["digest"]
    dropped = data["stages"][0]["bytes_dropped"]
    assert dropped > 0  # the capture cap did drop the middle
    assert dropped < 30000 * 100  # of the lines without their padding (16 MB with it)
    assert digest.splitlines()[-1] == "Found 7 errors"
    assert "line 30000 of the type tests" in digest
    assert all(line == line.rstrip() for line in digest.splitlines())
    assert data["digest_tokens"] < 600, data["digest_tokens"]


def test_fallback_digest_shows_the_first_failure_window_and_the_end(tmp_path: Path) -> None:
    digest = _check(tmp_path, FAILURE_FIRST)["digest"]
    lines = digest.splitlines()
    assert "not ok 60 - parses the header" in lines
    assert "  actual:   'b'" in lines
    assert lines[-1] == "# 1 failed, 398 passed"
    assert lines.index("not ok 60 - parses the header") < lines.index("# 1 failed, 398 passed")

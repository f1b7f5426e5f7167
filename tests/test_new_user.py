"""Tried as a new user would (issue 26): what a first day with greenloop runs into, as real processes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PY = sys.executable


@pytest.mark.parametrize("args", [["runs"], ["--version"], ["--help"], ["runs", "--help"]])
def test_every_command_exits_141_quietly_when_its_reader_has_closed_the_pipe(
    tmp_path: Path, args: list[str]
) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    proc = subprocess.Popen(
        [PY, "-m", "greenloop", *args],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    proc.stdout.close()  # the reader is gone before greenloop writes its first byte
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141  # 128 + SIGPIPE, as the shell reports `git log | head`
    assert err == ""  # no "internal error", no traceback, no crash log


def test_runs_piped_into_a_head_that_reads_nothing_says_nothing_on_stderr(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    proc = subprocess.run(
        f"{PY} -m greenloop runs | head -c 0; echo $? ${{PIPESTATUS[0]}}",
        shell=True,
        executable="/bin/bash",
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.stderr == ""
    assert proc.stdout.split()[1] in ("0", "141")  # 0 only when it wrote before head was gone

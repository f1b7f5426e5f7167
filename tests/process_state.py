"""What the tests ask of the process table, read without greenloop's code: ``/proc`` on Linux, as
the tests always read it, and ``ps`` (procps and BSD ps both take these options) where there is no
``/proc`` (macOS), or when the test forces the macOS path (``GREENLOOP_PLATFORM_PROBE=ps``, which
switches greenloop's own reader too). The one test helper that reads ``/proc``; test_platforms.py
holds the suite to that. ``resources/escape.py`` runs in a repository of its own and carries the
same few lines."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path


def reads_proc() -> bool:
    """/proc on Linux unless the macOS path is forced (as greenloop's process_table.uses_proc)."""
    return sys.platform.startswith("linux") and os.environ.get("GREENLOOP_PLATFORM_PROBE") != "ps"


def state(pid: int) -> str | None:
    """The process's state letter(s) (``S``, ``R``, ``Z``…), or None when it is gone."""
    if reads_proc():
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return None
    return _ps("-o", "stat=", "-p", str(pid)).strip() or None


def exited_unreaped(pid: int, timeout: float = 30.0) -> None:
    """Wait until our child ``pid`` has exited, leaving it a zombie: waitid(WNOWAIT) where Python
    has it (Linux; on macOS from Python 3.13 only), else its state polled until it reads ``Z``."""
    if hasattr(os, "waitid"):
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        return
    deadline = time.monotonic() + timeout
    while (state(pid) or "")[:1] != "Z":
        assert time.monotonic() < deadline, f"{pid} never became a zombie"
        time.sleep(0.02)


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    found = []
    if reads_proc():
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError, IndexError, ValueError):
                if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(stat.parent.name))
        return found
    for line in _ps("-A", "-o", "pid=,ppid=").splitlines():
        with contextlib.suppress(ValueError):
            child, parent = map(int, line.split())
            if parent == pid:
                found.append(child)
    return found


def command_lines() -> dict[int, list[bytes]]:
    """Every process's arguments: /proc/PID/cmdline split at its NULs (so a trailing empty word),
    or ps's command column split at spaces (an argument's own spaces split it too)."""
    found: dict[int, list[bytes]] = {}
    if reads_proc():
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            with contextlib.suppress(OSError):
                found[int(cmdline.parent.name)] = cmdline.read_bytes().split(b"\0")
        return found
    for line in _ps("-A", "-ww", "-o", "pid=,command=").splitlines():
        pid, _, command = line.strip().partition(" ")
        if pid.isdigit():
            found[int(pid)] = command.strip().encode().split(b" ")
    return found


def _ps(*args: str) -> str:
    """ps's stdout; empty when the process asked for is gone (ps then exits 1)."""
    done = subprocess.run(["ps", *args], capture_output=True, text=True, check=False)
    return done.stdout

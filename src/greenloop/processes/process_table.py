"""The process table, read the way this platform allows: ``/proc`` on Linux, ``ps`` elsewhere.

On Linux each process is a few files under ``/proc``; macOS (and the BSDs) have no ``/proc``, so
there the same facts come from ``ps`` and, for the files a process holds open, ``lsof``. Setting
``GREENLOOP_PLATFORM_PROBE=ps`` makes a Linux machine read them exactly as a Mac does (no
``/proc``, no subreaper), so the non-Linux path runs in the test suite here, not first on a
user's Mac. This module and process.py are the only ones that start processes below the CLI.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping

PROBE_VAR = "GREENLOOP_PLATFORM_PROBE"
TAG_VAR = "GREENLOOP_COMMAND_TAG"
PS_TIMEOUT_S = 30.0
# Both procps-ng (Linux) and BSD ps (macOS: Apple adv_cmds ps.1) accept every option used here:
# -A (every process; BSD's -e is *not* that in its legacy mode), -p LIST, -o KEYWORD= (an empty
# header), -ww (no width cut: BSD ps clips to 80 columns when stdout is no terminal), and the
# keywords pid ppid pgid stat lstart comm command. Not used: sess (macOS prints a kernel pointer)
# and etime (a start time computed from it moves by a second between two reads).
TABLE = ("-A", "-o", "pid=,ppid=,pgid=,stat=,lstart=")
# The one option that differs: the environment after the command is -E on macOS and the
# dashless BSD-style e on procps, which has no -E (macOS reads a dashless first word as -e).
ENV_PROCPS = ("e",)
ENV_BSD = ("-E",)
_TAG = re.compile(r"\d+\.\d+\.\d+")


def uses_proc(environ: Mapping[str, str] = os.environ, platform: str = sys.platform) -> bool:
    """Whether the table is read from /proc: on Linux, unless the ps probe is asked for."""
    return platform.startswith("linux") and environ.get(PROBE_VAR, "") != "ps"


class Proc:
    """One process (a plain class: a dataclass costs ~1 ms of import on the Stop hook's path)."""

    __slots__ = ("pgrp", "pid", "ppid", "session", "start", "state")

    def __init__(
        self, pid: int, state: str, ppid: int, pgrp: int, session: int, start: int
    ) -> None:
        self.pid, self.state, self.ppid = pid, state, ppid
        self.pgrp, self.session, self.start = pgrp, session, start

    @property
    def dead(self) -> bool:
        return self.state[:1] in ("Z", "X")


def table() -> dict[int, Proc]:
    """Every process on the machine, by pid."""
    if uses_proc():
        found = (_proc_stat(int(name)) for name in os.listdir("/proc") if name.isdigit())
        return {p.pid: p for p in found if p is not None}
    return {p.pid: p for p in _ps_table(TABLE)}


def stat(pid: int) -> Proc | None:
    """One process, or None when it is gone."""
    if uses_proc():
        return _proc_stat(pid)
    found = _ps_table(("-p", str(pid), *TABLE[1:]))
    return found[0] if found else None


def start_of(pid: int) -> str | None:
    """When ``pid`` started, as a word that differs for a recycled pid; None when it is gone.

    /proc: clock ticks after boot. ps: epoch seconds of its lstart (a second's resolution).
    """
    proc = stat(pid)
    return str(proc.start) if proc is not None else None


def tags(pids: Iterable[int]) -> dict[int, list[str]]:
    """The greenloop command tags in each process's environment (as it started)."""
    wanted = list(pids)
    if uses_proc():
        return {pid: _proc_tags(pid) for pid in wanted}
    if not wanted:
        return {}
    flag = ENV_PROCPS if sys.platform.startswith("linux") else ENV_BSD
    argv = ("ps", "-ww", *flag, "-o", "pid=,command=", "-p", ",".join(map(str, wanted)))
    found: dict[int, list[str]] = {pid: [] for pid in wanted}
    for line in _run(argv).splitlines():
        pid, _, rest = line.strip().partition(" ")
        if pid.isdigit() and int(pid) in found:
            found[int(pid)] = _tags_in(rest)
    return found


def _tags_in(command_and_env: str) -> list[str]:
    """ps prints the environment as NAME=value words after the command, the tag list's spaces
    included: the tags are the words after the last ``GREENLOOP_COMMAND_TAG=`` that look like one."""
    at = command_and_env.rfind(f" {TAG_VAR}=")
    if at < 0:
        return []
    words = command_and_env[at + len(TAG_VAR) + 2 :].split(" ")
    out = []
    for word in words:
        if not _TAG.fullmatch(word):
            break
        out.append(word)
    return out


def name(pid: int) -> str:
    """The executable's name (at most 15 characters, as /proc/PID/comm has it), or ``?``."""
    if uses_proc():
        try:
            with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as handle:
                return handle.read().strip() or "?"
        except OSError:
            return "?"
    comm = _run(("ps", "-ww", "-o", "comm=", "-p", str(pid))).strip()
    return os.path.basename(comm)[:15] or "?"  # BSD ps prints the executable's whole path


def held_open(paths: Iterable[str]) -> set[str]:
    """Which of ``paths`` (resolved) some process on this machine has open."""
    wanted = set(paths)
    if not wanted:
        return set()
    if uses_proc():
        return wanted & _proc_open_files()
    # lsof is on every Mac (/usr/sbin/lsof); -w: no warnings, -Fn: one "n<path>" line per file
    out = _run(("lsof", "-w", "-Fn", "--", *sorted(wanted)))
    named = {line[1:] for line in out.splitlines() if line.startswith("n")}
    return {p for p in wanted if p in named or os.path.realpath(p) in named}


def _proc_open_files() -> set[str]:
    files: set[str] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{entry}/fd"):
                with contextlib.suppress(OSError):
                    files.add(os.readlink(f"/proc/{entry}/fd/{fd}"))
    return files


def _proc_stat(pid: int) -> Proc | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        start = int(fields[19]) if len(fields) > 19 else 0  # field 22: clock ticks after boot
        return Proc(pid, fields[0], int(fields[1]), int(fields[2]), int(fields[3]), start)
    except (OSError, IndexError, ValueError):
        return None


def _proc_tags(pid: int) -> list[str]:
    prefix = TAG_VAR.encode() + b"="
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            entries = handle.read().split(b"\0")
    except OSError:
        return []
    found = next((e[len(prefix) :] for e in entries if e.startswith(prefix)), b"")
    return found.decode(errors="replace").split()


def _ps_table(argv: tuple[str, ...]) -> list[Proc]:
    procs = []
    for line in _run(("ps", *argv)).splitlines():
        fields = line.split(None, 4)
        with contextlib.suppress(ValueError, IndexError):
            pid, ppid, pgrp = int(fields[0]), int(fields[1]), int(fields[2])
            # no session id from BSD ps: the group stands for it (a setsid daemon leads both)
            procs.append(Proc(pid, fields[3], ppid, pgrp, pgrp, _epoch(fields[4])))
    return procs


def _epoch(lstart: str) -> int:
    """ps's lstart ("Sun Dec  6 18:29:36 2026", in the C locale) as epoch seconds."""
    return int(time.mktime(time.strptime(" ".join(lstart.split()), "%a %b %d %H:%M:%S %Y")))


def _run(argv: tuple[str, ...]) -> str:
    """stdout of a ps or lsof call in the C locale (lstart's format); empty when it cannot run."""
    env = {**os.environ, "LC_ALL": "C"}
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            env=env,
            timeout=PS_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.decode(errors="replace")

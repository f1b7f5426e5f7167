"""The process groups greenloop's commands run in, alive right now: listed for the run lock, and
stopped after a killed run or on an interrupt (process.py starts each command in its own group).

Below process.py and orphans.py, which both read a process's start time from here.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Mapping

from greenloop import signals
from greenloop.processes import process_table

KILL_GRACE_S = 2.0


class LiveGroups:
    """Process groups (one per child: its own session) alive right now, for the run lock.

    A watcher (the run lock) is told every change, so a greenloop killed with -9 leaves behind
    the list of groups the next ``run`` or ``recover`` must stop before touching the tree.
    """

    def __init__(self) -> None:
        self.pids: dict[int, str] = {}
        self.watchers: list[Callable[[dict[int, str]], None]] = []

    def add(self, pid: int) -> None:
        self.pids[pid] = process_start(pid) or ""
        self._tell()

    def discard(self, pid: int) -> None:
        if self.pids.pop(pid, None) is not None:
            self._tell()

    def _tell(self) -> None:
        for watcher in self.watchers:
            watcher(dict(self.pids))


groups = LiveGroups()


def process_start(pid: int) -> str | None:
    """When ``pid`` started (a recycled pid has another); None when it is gone."""
    return process_table.start_of(pid)


def stop_groups(recorded: Mapping[int, str], grace_s: float = KILL_GRACE_S) -> tuple[int, ...]:
    """Stop the recorded groups still alive (a killed run's survivors); returns those stopped.

    A group whose leader is alive with another start time is someone else's (a reused pid).
    """
    alive = []
    for pgid, started in recorded.items():
        now_started = process_start(pgid)
        if now_started is not None and started and now_started != started:
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGTERM)
            alive.append(pgid)
    deadline = time.monotonic() + grace_s
    while alive and time.monotonic() < deadline and any(_pgid_alive(g) for g in alive):
        time.sleep(0.05)
    for pgid in alive:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    return tuple(alive)


def stop_running() -> tuple[int, ...]:
    """Stop every command still running (other threads' stages, on an interrupt seen by this one).

    Their ``run_command`` calls then end as killed, and stop what escaped their groups."""
    with signals.held(redeliver=False):  # a second Ctrl-C must not cut the kill short
        return stop_groups(dict(groups.pids))


def _pgid_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True

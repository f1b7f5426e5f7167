"""What a command leaves running outside its process group: found, stopped and reaped (Linux).

A verifier stage or an agent command runs in its own session, and its group is killed when it
ends (process.py). A child that calls ``setsid()`` (a daemon, ``nohup … &`` with setsid, a test's
background server started with ``start_new_session=True``) leaves that group and would outlive
the run: holding a port, writing into a tree greenloop has since committed or reverted.

Two things find it. greenloop's own process (the command line, a batch worker) is a child
subreaper, so such an orphan re-parents to greenloop rather than to init. And every command's
environment carries a tag, ``GREENLOOP_COMMAND_TAG``, that its descendants inherit (Jenkins finds a
build's daemons by an environment cookie the same way). When the command ends, greenloop's children
that carry its tag, and everything below them, get SIGTERM, a short grace, SIGKILL, and are reaped.
A program that imports greenloop as a library is never made a subreaper (the orphans of its own
other children would re-parent to it, zombies it never waits for): there the tag is looked for in
every process of /proc, which costs more per command but touches nothing of the program's. A
process of another command running side by side carries that command's tag and is left alone; one
without a tag of the command that just ended (git's fsmonitor daemon or gpg-agent, a batch worker,
one started with ``env -i``) is never touched. Off Linux nothing here runs: today's behaviour.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache

from greenloop import signals

TAG_VAR = "GREENLOOP_COMMAND_TAG"
LINUX = sys.platform.startswith("linux")
PR_SET_CHILD_SUBREAPER = 36
POLL_S = 0.02
_serial = itertools.count(1)
_mode = {"own_process": False, "subreaper": False}


@dataclass(frozen=True, slots=True, kw_only=True)
class Escaped:
    """A process that escaped a command's process group and was stopped after the command."""

    pid: int
    name: str
    """Its ``/proc/PID/comm`` (the executable's name, at most 15 characters)."""


class _Proc:
    """One line of /proc/PID/stat (a plain class: a dataclass costs ~1 ms of import)."""

    __slots__ = ("pgrp", "pid", "ppid", "session", "start", "state")

    def __init__(self, pid: int, fields: list[str]) -> None:
        self.pid, self.state = pid, fields[0]
        self.ppid, self.pgrp, self.session = int(fields[1]), int(fields[2]), int(fields[3])
        # field 22 of /proc/PID/stat: when it started, in clock ticks after boot
        self.start = int(fields[19]) if len(fields) > 19 else 0

    @property
    def dead(self) -> bool:
        return self.state in "ZX"


class _Marks:
    """What belongs to the command: a zombie has no environment left to read its tag from."""

    __slots__ = ("groups", "pids")

    def __init__(self, pgid: int) -> None:
        self.pids: set[int] = set()
        self.groups: set[int] = {pgid}


def own_process() -> None:
    """Called by greenloop's own entry points (the command line, a batch worker), never on import:
    this process may become a child subreaper when it first runs a command."""
    _mode["own_process"] = True


def become_subreaper() -> None:
    """Orphans of what greenloop starts re-parent to greenloop, not init (Linux, greenloop's own
    process; a library's host is left as it is, its escapes are found by their tag in /proc)."""
    if not LINUX or not _mode["own_process"] or _mode["subreaper"]:
        return
    try:
        import ctypes  # here only: the Stop hook's cached path never runs a command

        libc = ctypes.CDLL(None, use_errno=True)
        _mode["subreaper"] = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):  # no libc prctl: orphans go to init, found by their tag
        pass


def new_tag() -> str:
    """A tag no other command carries: greenloop's pid and start time, and a serial number.

    After a kill -9 of greenloop, ``stop_tagged_by`` finds what its commands left by that prefix.
    """
    return f"{_owner(os.getpid())}.{next(_serial)}"


@cache
def _owner(pid: int) -> str:
    from greenloop.processes.process import (
        process_start,  # here: a report reads this module without it
    )

    return f"{pid}.{process_start(pid) or 0}"  # the start time the run lock records


def stop_tagged_by(pid: int, start: str, grace_s: float = 2.0) -> tuple[Escaped, ...]:
    """Stop every process a dead greenloop (``pid`` started at ``start``)'s commands left.

    They re-parented to init when greenloop died, so the whole /proc is read for their tag.
    """
    if not LINUX or not start:
        return ()
    prefix = f"{pid}.{start}."
    others = (n for n in _all_pids() if n != os.getpid())  # a recover its agent ran
    found = [
        p
        for p in map(_stat, others)
        if p is not None and not p.dead and any(t.startswith(prefix) for t in _tags(p.pid))
    ]
    stopped = tuple(Escaped(pid=p.pid, name=_comm(p.pid)) for p in found)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for p in found:
            _signal(p.pid, sig)
        deadline = time.monotonic() + grace_s
        while found and time.monotonic() < deadline:
            found = [p for p in found if (now := _stat(p.pid)) is not None and not now.dead]
            time.sleep(POLL_S)
    return stopped


def tagged(env: Mapping[str, str], tag: str) -> dict[str, str]:
    """``env`` whose tag list ends with ``tag`` (a nested greenloop's commands carry both)."""
    tags = env.get(TAG_VAR, "").split()
    return {**env, TAG_VAR: " ".join([*tags, tag])}


def describe(escaped: Sequence[Escaped]) -> str:
    """One line for a report: what escaped the command's process group and was stopped."""
    shown = ", ".join(f"{e.name} (pid {e.pid})" for e in escaped[:5])
    more = f" and {len(escaped) - 5} more" if len(escaped) > 5 else ""
    count = "1 leftover process" if len(escaped) == 1 else f"{len(escaped)} leftover processes"
    return f"stopped {count} that escaped the command's process group: {shown}{more}"


def stop_escaped(
    tag: str, pgid: int, busy: Collection[int], grace_s: float = 2.0
) -> tuple[Escaped, ...]:
    """Stop and reap what the command tagged ``tag`` (group ``pgid``) left under greenloop.

    ``busy``: greenloop's children still being waited on (commands running); never looked into.
    Bounded: SIGTERM, ``grace_s``, SIGKILL, and after another ``grace_s`` what is left stays.
    """
    if not LINUX:
        return ()
    marks = _Marks(pgid)
    found = _find(tag, busy, marks)
    if not found:  # what every command pays: one read of greenloop's children
        return ()
    with signals.held():  # a Ctrl-C now must not leave them half stopped
        return _stop(found, lambda: _find(tag, busy, marks), pgid, grace_s)


def _stop(
    found: list[_Proc], find: Callable[[], list[_Proc]], pgid: int, grace_s: float
) -> tuple[Escaped, ...]:
    stopped: dict[int, Escaped] = {}
    termed: set[int] = set()
    start = time.monotonic()
    while found:
        # a zombie whose threads are still exiting cannot be reaped yet: it is waited for too
        _reap(p.pid for p in found if p.dead and p.ppid == os.getpid())
        for p in found:
            if not p.dead and p.pgrp != pgid and p.pid not in stopped:  # not the group's own
                stopped[p.pid] = Escaped(pid=p.pid, name=_comm(p.pid))
        elapsed = time.monotonic() - start
        if elapsed > 2 * grace_s:
            break
        for p in found:  # a zombie too: its leader may be gone while its other threads run
            if p.pid not in termed:
                _signal(p.pid, signal.SIGTERM)
                termed.add(p.pid)
            elif elapsed > grace_s:
                _signal(p.pid, signal.SIGKILL)
        time.sleep(POLL_S)
        found = find()
    return tuple(sorted(stopped.values(), key=lambda e: e.pid))


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def _reap(pids: Iterable[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def _find(tag: str, busy: Collection[int], marks: _Marks) -> list[_Proc]:
    """greenloop's children that belong to the command, each with everything below it; where
    greenloop is not a subreaper (a library's host), every process that belongs to it."""
    children = child_lister()
    found: list[_Proc] = []
    roots = children(os.getpid()) if _mode["subreaper"] else _all_pids()
    since = 0 if _mode["subreaper"] else _started(os.getpid())  # older ones are not ours
    for pid in roots:
        proc = None if pid in busy or pid == os.getpid() else _stat(pid)
        if proc is not None and proc.start >= since and _belongs(proc, tag, marks):
            found += _subtree(proc, children)
    found = list({proc.pid: proc for proc in found}.values())  # in /proc's scan, roots nest
    for proc in found:
        if not proc.dead:
            marks.pids.add(proc.pid)
            marks.groups.update((proc.pgrp, proc.session))
    return found


def _belongs(proc: _Proc, tag: str, marks: _Marks) -> bool:
    if proc.pid in marks.pids:
        return True
    if proc.dead:
        return proc.pgrp in marks.groups or proc.session in marks.groups
    return tag in _tags(proc.pid)


def _subtree(root: _Proc, children: Callable[[int], list[int]]) -> list[_Proc]:
    out, todo = [], [root]
    while todo:
        proc = todo.pop()
        out.append(proc)
        todo += [p for p in map(_stat, children(proc.pid)) if p is not None]
    return out


def child_lister() -> Callable[[int], list[int]]:
    """pid -> its children: /proc/PID/task/*/children, or a ppid scan where the kernel lacks it."""
    if os.path.exists(f"/proc/self/task/{os.getpid()}/children"):
        return _children
    by_parent = scan_parents()
    return lambda pid: by_parent.get(pid, [])


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{tid}/children") as handle:
                kids += map(int, handle.read().split())
    return kids


def scan_parents() -> dict[int, list[int]]:
    """Every process's children, from the ppid in each /proc/PID/stat."""
    by_parent: dict[int, list[int]] = defaultdict(list)
    for proc in map(_stat, _all_pids()):
        if proc is not None:
            by_parent[proc.ppid].append(proc.pid)
    return by_parent


def _all_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _stat(pid: int) -> _Proc | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return _Proc(pid, fields)


@cache
def _started(pid: int) -> int:
    proc = _stat(pid)
    return proc.start if proc is not None else 0


def _tags(pid: int) -> list[str]:
    prefix = TAG_VAR.encode() + b"="
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            entries = handle.read().split(b"\0")
    except OSError:
        return []
    found = next((e[len(prefix) :] for e in entries if e.startswith(prefix)), b"")
    return found.decode(errors="replace").split()


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as handle:
            return handle.read().strip() or "?"
    except OSError:
        return "?"

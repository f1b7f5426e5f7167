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
every process of the table, which costs more per command but touches nothing of the program's. A
process of another command running side by side carries that command's tag and is left alone; one
without a tag of the command that just ended (git's fsmonitor daemon or gpg-agent, a batch worker,
one started with ``env -i``) is never touched. Off Linux (macOS, the BSDs) there is no subreaper:
the table comes from ``ps`` (process_table.py) and the tag is looked for in every process, as
for a library's host; ``GREENLOOP_PLATFORM_PROBE=ps`` runs that path on Linux.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache

from greenloop import signals
from greenloop.processes import process_table
from greenloop.processes.process_groups import process_start
from greenloop.processes.process_table import TAG_VAR, Proc

PR_SET_CHILD_SUBREAPER = 36
POLL_S = 0.02
_serial = itertools.count(1)
_mode = {"own_process": False, "subreaper": False}


@dataclass(frozen=True, slots=True, kw_only=True)
class Escaped:
    """A process that escaped a command's process group and was stopped after the command."""

    pid: int
    name: str
    """The executable's name (``/proc/PID/comm``, or ps's ``comm``; at most 15 characters)."""


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
    process; a library's host is left as it is, its escapes are found by their tag in the process table)."""
    if not process_table.uses_proc() or not _mode["own_process"] or _mode["subreaper"]:
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
    return f"{pid}.{process_start(pid) or 0}"  # the start time the run lock records


def stop_tagged_by(pid: int, start: str, grace_s: float = 2.0) -> tuple[Escaped, ...]:
    """Stop every process a dead greenloop (``pid`` started at ``start``)'s commands left.

    They re-parented to init when greenloop died, so the whole process table is read for their tag.
    """
    if not start:
        return ()
    prefix = f"{pid}.{start}."
    alive = [p for p in process_table.table().values() if not p.dead and p.pid != os.getpid()]
    tags = process_table.tags(p.pid for p in alive)  # not a recover its agent ran
    found = [p for p in alive if any(t.startswith(prefix) for t in tags.get(p.pid, []))]
    stopped = tuple(Escaped(pid=p.pid, name=process_table.name(p.pid)) for p in found)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for p in found:
            _signal(p.pid, sig)
        deadline = time.monotonic() + grace_s
        while found and time.monotonic() < deadline:
            found = [
                p for p in found if (now := process_table.stat(p.pid)) is not None and not now.dead
            ]
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
    marks = _Marks(pgid)
    found = _find(tag, busy, marks)
    if not found:  # what every command pays: one read of greenloop's children
        return ()
    with signals.held():  # a Ctrl-C now must not leave them half stopped
        return _stop(found, lambda: _find(tag, busy, marks), pgid, grace_s)


def _stop(
    found: list[Proc], find: Callable[[], list[Proc]], pgid: int, grace_s: float
) -> tuple[Escaped, ...]:
    stopped: dict[int, Escaped] = {}
    termed: set[int] = set()
    start = time.monotonic()
    while found:
        # a zombie whose threads are still exiting cannot be reaped yet: it is waited for too
        _reap(p.pid for p in found if p.dead and p.ppid == os.getpid())
        for p in found:
            if not p.dead and p.pgrp != pgid and p.pid not in stopped:  # not the group's own
                stopped[p.pid] = Escaped(pid=p.pid, name=process_table.name(p.pid))
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
        found = _still_to_stop(find())
    return tuple(sorted(stopped.values(), key=lambda e: e.pid))


def _still_to_stop(found: list[Proc]) -> list[Proc]:
    """Off Linux a zombie has no thread left and is init's to reap (no subreaper): waiting for
    it only waits on init. On Linux a zombie leader's other threads may still run: kept."""
    if process_table.uses_proc():
        return found
    return [p for p in found if not p.dead or p.ppid == os.getpid()]


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def _reap(pids: Iterable[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def _find(tag: str, busy: Collection[int], marks: _Marks) -> list[Proc]:
    """greenloop's children that belong to the command, each with everything below it; where
    greenloop is not a subreaper (a library's host, macOS), every process that belongs to it."""
    look: Callable[[int], Proc | None] = process_table.stat
    if _mode["subreaper"]:
        children = child_lister()
        roots, since = children(os.getpid()), 0
    else:  # one read of the whole table, children from its parent pids
        procs = process_table.table()
        by_parent = _by_parent(procs.values())
        children, look = (lambda pid: by_parent.get(pid, [])), procs.get
        roots, since = list(procs), _started(os.getpid())  # older ones are not ours
    me = os.getpid()
    candidates = [
        p
        for p in (look(pid) for pid in roots if pid not in busy and pid != me)
        if p is not None and p.start >= since
    ]
    unknown = [p.pid for p in candidates if p.pid not in marks.pids and not p.dead]
    tags = process_table.tags(unknown)
    found: list[Proc] = []
    for proc in candidates:
        if _belongs(proc, tag in tags.get(proc.pid, ()), marks):
            found += _subtree(proc, children, look)
    found = list({proc.pid: proc for proc in found}.values())  # in a whole-table scan, roots nest
    for proc in found:
        if not proc.dead:
            marks.pids.add(proc.pid)
            marks.groups.update((proc.pgrp, proc.session))
    return found


def _belongs(proc: Proc, tagged: bool, marks: _Marks) -> bool:
    if proc.pid in marks.pids:
        return True
    if proc.dead:
        return proc.pgrp in marks.groups or proc.session in marks.groups
    return tagged


def _subtree(
    root: Proc, children: Callable[[int], list[int]], look: Callable[[int], Proc | None]
) -> list[Proc]:
    out, todo = [], [root]
    while todo:
        proc = todo.pop()
        out.append(proc)
        todo += [p for p in map(look, children(proc.pid)) if p is not None]
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
    """Every process's children, from each one's parent pid in the process table."""
    return _by_parent(process_table.table().values())


def _by_parent(procs: Iterable[Proc]) -> dict[int, list[int]]:
    by_parent: dict[int, list[int]] = defaultdict(list)
    for proc in procs:
        by_parent[proc.ppid].append(proc.pid)
    return by_parent


@cache
def _started(pid: int) -> int:
    proc = process_table.stat(pid)
    return proc.start if proc is not None else 0

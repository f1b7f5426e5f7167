"""The run lock: ``<common dir>/greenloop/lock``, one run per repository, and what ``recover`` needs.

Beside it, ``lock.groups`` lists the process groups of the run's children, so the next ``run`` or
``recover`` stops what a killed run left alive before it touches the tree.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from greenloop.errors import FatalError
from greenloop.processes import process_groups, process_table

TYPE_CHECKING = False
if TYPE_CHECKING:
    from greenloop.processes.orphans import Escaped

# A torn (half-written) lock this young may belong to a run that is starting right now.
TORN_LOCK_GRACE_S = 5.0
LOCK_KEYS = (
    "run_id",
    "pid",
    "branch",
    "initial_sha",
    "started_at",
    "root",
    "host",
    "pid_start",
    "ignored",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunLock:
    """The contents of ``<common dir>/greenloop/lock``: enough for ``recover`` to restore."""

    path: Path
    run_id: str
    pid: int
    branch: str
    initial_sha: str
    started_at: float
    root: str = ""
    host: str = ""
    pid_start: str = ""
    """The process's start time (/proc or ps: guards against a recycled pid), when available."""
    ignored: tuple[str, ...] = ()
    """The run's ignored-at-start paths, so ``recover`` never stages them either."""


def lock_path(common_dir: Path) -> Path:
    return common_dir / "greenloop" / "lock"


def new_lock(
    common_dir: Path,
    run_id: str,
    *,
    branch: str,
    initial_sha: str,
    root: Path,
    ignored: tuple[str, ...],
) -> RunLock:
    """The lock a run starting now in this process would write."""
    pid = os.getpid()
    return RunLock(
        path=lock_path(common_dir),
        run_id=run_id,
        pid=pid,
        branch=branch,
        initial_sha=initial_sha,
        started_at=time.time(),
        root=str(root),
        host=socket.gethostname(),
        pid_start=process_groups.process_start(pid) or "",
        ignored=ignored,
    )


@contextlib.contextmanager
def acquire(lock: RunLock) -> Iterator[RunLock]:
    """Hold the repository's run lock; released on return and on any exception, not on kill -9.

    While it is held, the process groups of our children are written beside it (issue 12), so
    after a kill -9 the next ``run`` or ``recover`` stops the survivors first.
    """
    write_lock(lock)
    groups_file = groups_path(lock.path.parent.parent)
    watcher = partial(_write_groups, groups_file)
    process_groups.groups.watchers.append(watcher)
    try:
        yield lock
    finally:
        process_groups.groups.watchers.remove(watcher)
        with contextlib.suppress(FileNotFoundError):
            groups_file.unlink()
        release_lock(lock)


def write_lock(lock: RunLock) -> RunLock:
    """Create the lock file whole, or raise FatalError naming the run that holds it."""
    lock.path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(_lock_fields(lock), indent=1).encode()
    tmp = lock.path.with_name(f".{lock.path.name}.{os.getpid()}.{lock.run_id}.tmp")
    with tmp.open("wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())  # complete on disk before any work starts
    try:
        # a hard link appears whole or not at all: a rival starting this instant reads our run
        # id, never a half-written file, and a kill -9 here leaves no torn lock behind
        os.link(tmp, lock.path)
    except FileExistsError:
        raise FatalError(held_message(read_lock(lock.path.parent.parent))) from None
    except OSError:  # a file system without hard links
        _write_exclusive(lock, data)
    finally:
        tmp.unlink(missing_ok=True)
    return lock


def _write_exclusive(lock: RunLock, data: bytes) -> None:
    try:
        fd = os.open(lock.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        raise FatalError(held_message(read_lock(lock.path.parent.parent))) from None
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def groups_path(common_dir: Path) -> Path:
    return common_dir / "greenloop" / "lock.groups"


def _write_groups(path: Path, live: dict[int, str]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(OSError):
        tmp.write_text(json.dumps({str(pid): start for pid, start in live.items()}))
        os.replace(tmp, path)


def stop_survivors(common_dir: Path) -> tuple[int, ...]:
    """Stop the process groups a dead run left alive (its agent, its verifier); forget them."""
    path = groups_path(common_dir)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        recorded = {int(pid): str(start) for pid, start in data.items()}
    except (OSError, ValueError, AttributeError):
        return ()
    stopped = process_groups.stop_groups(recorded)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    return stopped


def stop_escapes(lock: RunLock) -> tuple[Escaped, ...]:
    """Stop what the dead run's commands started outside their groups (a daemon): by their tag."""
    from greenloop.processes import orphans

    return orphans.stop_tagged_by(lock.pid, lock.pid_start) if lock.pid > 0 else ()


def _lock_fields(lock: RunLock) -> dict[str, object]:
    return {name: getattr(lock, name) for name in LOCK_KEYS}


def read_lock(common_dir: Path) -> RunLock | None:
    """The lock as written, None when there is none; a torn lock reads as run id ``?``."""
    path = lock_path(common_dir)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return RunLock(path=path, **{k: data[k] for k in data if k in LOCK_KEYS})
    except FileNotFoundError:
        return None
    except (ValueError, TypeError, KeyError):
        # killed between creating the file and writing it: no work can have started
        mtime = path.stat().st_mtime if path.exists() else 0.0
        return RunLock(path=path, run_id="?", pid=0, branch="", initial_sha="", started_at=mtime)


def release_lock(lock: RunLock) -> None:
    """Remove the lock if it is still ours."""
    current = read_lock(lock.path.parent.parent)
    if current is not None and current.run_id == lock.run_id:
        with contextlib.suppress(FileNotFoundError):
            lock.path.unlink()


def lock_is_live(lock: RunLock) -> bool:
    """Whether the process that wrote the lock still runs (a lock from another host counts)."""
    if lock.pid <= 0:  # torn: a run is writing it this instant, or died doing so
        return time.time() - lock.started_at < TORN_LOCK_GRACE_S
    if lock.host and lock.host != socket.gethostname():
        return True  # can't see that host's processes; recover on that host, or by hand
    if not _pid_alive(lock.pid):
        return False
    started = process_groups.process_start(lock.pid)
    return not (lock.pid_start and started and started != lock.pid_start)


def held_message(lock: RunLock | None) -> str:
    if lock is not None and lock_is_live(lock):
        where = f" on {lock.host}" if lock.host and lock.host != socket.gethostname() else ""
        return f"another greenloop run ({lock.run_id}, pid {lock.pid}{where}) is in progress"
    run_id = lock.run_id if lock is not None else "?"
    return (
        f"a previous run ({run_id}) did not finish (killed?); "
        "run `greenloop recover` to restore the branch and keep its work"
    )


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = process_table.stat(pid)
    return proc is None or not proc.dead  # a zombie is dead; unreadable: taken as alive

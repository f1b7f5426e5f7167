"""A verifier stage or agent that leaves a daemon behind in its own session (tests/test_process_escapes.py).

escape.py daemon PIDFILE LOGFILE EXIT|hang   start a daemon, then exit EXIT or hang
escape.py lint DIR     wait for the type stage's daemon, start one (DIR/lint.pid), exit 0
escape.py type DIR     start a daemon (DIR/type.pid), wait until lint's is gone, exit 0 if
                       its own daemon is still alive, else 1
escape.py under PIDFILE   exit 1 if that pid, or any zombie, is still greenloop's child
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

# /proc on Linux; ps elsewhere (macOS), or when a test forces the macOS path, as greenloop does
READS_PROC = sys.platform.startswith("linux") and os.environ.get("GREENLOOP_PLATFORM_PROBE") != "ps"


def spawn_daemon(pidfile: Path, logfile: Path) -> int:
    """fork, setsid, fork: the classic daemon, whose parent exits at once."""
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            pidfile.with_suffix(".tmp").write_text(str(os.getpid()))
            pidfile.with_suffix(".tmp").rename(pidfile)
            while True:  # keeps writing, as a server's log would
                with logfile.open("a") as log:
                    log.write("still here\n")
                time.sleep(0.05)
        os._exit(0)
    os.wait()
    wait_until(pidfile.exists)
    return int(pidfile.read_text())


def wait_until(done: Callable[[], bool], timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def alive(pid: int) -> bool:
    """Running: not gone, and not a zombie waiting to be reaped."""
    if not READS_PROC:  # no /proc (macOS): ps, whose stat is empty for a process that is gone
        return ps("-o", "stat=", "-p", str(pid)).strip()[:1] not in ("", "Z", "X")
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in "ZX"


def greenloop_children() -> list[int]:
    """The pid is in the command's tag (GREENLOOP_COMMAND_TAG=<greenloop pid>.<n>)."""
    pid = os.environ["GREENLOOP_COMMAND_TAG"].split()[-1].split(".")[0]
    kids: list[int] = []
    if not READS_PROC:  # no /proc/PID/task/*/children: every process's parent, from ps
        for line in ps("-A", "-o", "pid=,ppid=").splitlines():
            child, parent = line.split()
            kids += [int(child)] if parent == pid else []
        return kids
    for task in Path(f"/proc/{pid}/task").iterdir():
        kids += [int(k) for k in (task / "children").read_text().split()]
    return kids


def ps(*args: str) -> str:
    return subprocess.run(["ps", *args], capture_output=True, text=True, check=False).stdout


def main(mode: str, *args: str) -> int:
    if mode == "daemon":
        spawn_daemon(Path(args[0]), Path(args[1]))
        if args[2] == "hang":
            time.sleep(600)
        return int(args[2])
    folder = Path(args[0]).parent if mode == "under" else Path(args[0])
    if mode == "lint":
        wait_until((folder / "type.pid").exists)
        spawn_daemon(folder / "lint.pid", folder / "lint.log")
        return 0
    if mode == "type":
        own = spawn_daemon(folder / "type.pid", folder / "type.log")
        wait_until((folder / "lint.pid").exists)
        gone = wait_until(lambda: not alive(int((folder / "lint.pid").read_text())))
        print(f"lint's daemon gone while type ran: {gone}; type's own daemon alive: {alive(own)}")
        return 0 if alive(own) else 1
    left = int(Path(args[0]).read_text())
    kids = greenloop_children()
    zombies = [k for k in kids if not alive(k)]
    print(f"greenloop's children: {kids}; zombies: {zombies}; the daemon {left} among them")
    return 1 if left in kids or zombies else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))

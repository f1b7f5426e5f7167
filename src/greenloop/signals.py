"""Stop signals: Ctrl-C, SIGTERM and a hang-up (SIGHUP) all stop a run the same way.

``held`` keeps them out of a step that must finish whole (a child started and registered, a
process group killed, a multi-step git change, the final report); they are delivered after it.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

TYPE_CHECKING = False  # not typing's: the Stop hook imports this on every agent turn (issue 16)
if TYPE_CHECKING:
    from typing import Any

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where Ctrl-C's KeyboardInterrupt is: every stop path is one."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)


def what_stopped(exc: KeyboardInterrupt) -> str:
    """ "SIGTERM", "SIGHUP", or "Ctrl-C" (SIGINT, Python's own KeyboardInterrupt)."""
    return str(exc.args[0]) if isinstance(exc, Stopped) else "Ctrl-C"


@contextmanager
def stop_as_interrupt() -> Iterator[None]:
    """SIGTERM and SIGHUP raise KeyboardInterrupt like Ctrl-C (``nohup``'s ignored SIGHUP stays so)."""

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise Stopped(signum)

    old: dict[signal.Signals, Any] = {}
    try:
        for sig in (signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(sig) is not signal.SIG_IGN:
                old[sig] = signal.signal(sig, interrupt)
    except ValueError:  # not the main thread: leave signals alone
        pass
    try:
        yield
    finally:
        for restored, handler in old.items():
            signal.signal(restored, handler)


@contextmanager
def held(*, redeliver: bool = True) -> Iterator[list[int]]:
    """Hold stop signals for the block; then deliver them (or, ``redeliver=False``, drop them).

    Yields the list of signals received so far, so a caller can tell it was asked to stop.
    """
    received: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        received.append(signum)

    old: dict[signal.Signals, Any] = {}
    try:
        for sig in STOP_SIGNALS:
            if signal.getsignal(sig) is not signal.SIG_IGN:
                old[sig] = signal.signal(sig, hold)
    except ValueError:  # not the main thread: signals cannot reach us here anyway
        pass
    try:
        yield received
    finally:
        for restored, handler in old.items():
            signal.signal(restored, handler)
        if redeliver:
            deliver(received)


def deliver(received: list[int]) -> None:
    """Raise the held signals now (the caller's handlers see them)."""
    for signum in dict.fromkeys(received):
        signal.raise_signal(signum)

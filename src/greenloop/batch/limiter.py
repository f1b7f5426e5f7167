"""``--max-parallel-agents K``: at most K agent calls at once across the whole batch.

Locally the K slots are K lock files (``flock``): held across processes, freed by the kernel when a
holder dies. On Ray the slots live in one actor (``executors/ray.py``). Verifiers are not counted.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from greenloop.agents.base import Agent, AgentOutcome, AgentRequest

POLL_S = 0.05


class Slots(Protocol):
    def hold(self) -> AbstractContextManager[float]:
        """Wait for a free slot (yielding the seconds waited); free it on exit."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class FileSlots:
    """K lock files under ``directory``."""

    directory: str
    count: int

    @contextmanager
    def hold(self) -> Iterator[float]:
        """Yield the seconds waited for a free slot; the slot is freed on exit."""
        start = time.monotonic()
        Path(self.directory).mkdir(parents=True, exist_ok=True)
        while True:
            fd = self._try_acquire()
            if fd is not None:
                break
            time.sleep(POLL_S)
        try:
            yield time.monotonic() - start
        finally:
            os.close(fd)  # closing the descriptor drops the flock

    def _try_acquire(self) -> int | None:
        for i in range(self.count):
            fd = os.open(Path(self.directory) / f"slot-{i}", os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            return fd
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class LimitedAgent:
    """An agent whose every call first takes a slot."""

    inner: Agent
    slots: Slots
    waits: list[float] = field(default_factory=list)
    """Seconds each call waited for a slot (the row's ``agent_slot_wait_s``)."""

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def continues(self) -> bool:
        return self.inner.continues

    def describe(self) -> str:
        return self.inner.describe()

    def run(self, request: AgentRequest) -> AgentOutcome:
        with self.slots.hold() as waited:
            self.waits.append(waited)
            return self.inner.run(request)

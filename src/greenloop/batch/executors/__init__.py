"""Where tasks run: ``local`` (a process pool on this machine) or ``ray`` (a Ray cluster)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from greenloop.batch.worker import Job, Outcome

Deliver = Callable[[Outcome, Path | None], None]
"""The driver's hand: store the record (a folder to move, or the outcome's bytes), append the row."""
Started = Callable[[Job, Path | None], None]
"""A task started; the folder where its pool process writes its phase (None on Ray)."""
Phases = Callable[[Mapping[str, str]], None]
"""What the running tasks do now, by id (``clone``, ``baseline``, ``iter 2`` …): Ray's way."""
MayStart = Callable[[], bool]
"""Whether another task may start (False once a batch-wide budget is spent): running ones finish."""

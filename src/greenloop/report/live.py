"""What the terminal shows while a run works (issue 13): the progress lines, and, only when the
stream is a terminal, a status line below them that ticks (phase, elapsed, the latest output line)
so a long baseline or agent call never looks hung. Not a terminal: plain lines, no control codes.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

from greenloop.processes.process import strip_ansi

REFRESH_PER_S = 4
LAST_LINE_CHARS = 200
PARTIAL_CHARS = 2000


class Display:
    """Plain progress: one line per step, nothing else (CI, pipes, files)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def line(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def phase(self, label: str) -> None:
        """A new phase began (``baseline``, ``iter 2/5 · agent``); plain output says nothing."""

    def output(self, chunk: bytes) -> None:
        """A chunk a verifier or agent printed; plain output says nothing."""

    def close(self) -> None:
        """Nothing to stop."""


class LiveDisplay(Display):
    """rich's live display: progress lines scroll above one status line redrawn 4 times a second."""

    def __init__(self, stream: TextIO, now: Callable[[], float] = time.monotonic) -> None:
        super().__init__(stream)
        from rich.console import Console

        self.console = Console(file=stream, highlight=False)
        self.now = now
        self.label, self.since, self.last, self.partial = "", now(), "", ""
        self.live: Any = None
        self.lock = threading.Lock()

    def line(self, text: str) -> None:
        console = self.live.console if self.live is not None else self.console
        console.print(text, markup=False, style="bold" if text.startswith("iter") else None)

    def phase(self, label: str) -> None:
        with self.lock:
            self.label, self.since, self.last, self.partial = label, self.now(), "", ""
        if self.live is None:  # started late: never under the pre-flight question
            from rich.live import Live

            self.live = Live(
                console=self.console,
                get_renderable=self.render,
                refresh_per_second=REFRESH_PER_S,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self.live.start()

    def output(self, chunk: bytes) -> None:
        """The line being written, across chunks: pytest's ``tests/test_x.py ..F.`` grows a dot
        at a time, and a dot alone says nothing."""
        text = strip_ansi(chunk.decode("utf-8", errors="replace")).replace("\r", "\n")
        with self.lock:
            lines = (self.partial + text).split("\n")
            self.partial = lines[-1][-PARTIAL_CHARS:]
            shown = [line.strip() for line in lines if line.strip()]
            if shown:
                self.last = shown[-1][:LAST_LINE_CHARS]

    def status(self) -> str:
        with self.lock:
            label, since, last = self.label, self.since, self.last
        text = f"{label} · {self.now() - since:.0f} s"
        return f"{text} · {last}" if last else text

    def render(self) -> Any:
        from rich.text import Text

        return Text(f"… {self.status()}", no_wrap=True, overflow="ellipsis", style="dim")

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None


def open_display(stream: TextIO) -> Display:
    """Live on a terminal (rich imported only then), plain lines everywhere else."""
    if stream.isatty() and os.environ.get("TERM") != "dumb":
        return LiveDisplay(stream)
    return Display(stream)

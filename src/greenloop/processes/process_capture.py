"""A command's output as it is read: the head and the tail of each stream kept under a byte cap,
colour and terminal controls stripped, redacted when asked (process.py reads the pipes)."""

from __future__ import annotations

import re
from collections import deque

from greenloop.redact import redact

HEAD_BYTES = 64 * 1024
TAIL_BYTES = 512 * 1024

_ANSI = re.compile(
    r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC ... BEL or ST (hyperlinks, titles)
    r"|\x1b\[[0-?]*[ -/]*[@-~]"  # CSI (colours, cursor moves)
    r"|\x1b[@-Z\\-_]"  # other two-byte escapes
)
# 16+ spaces or tabs closing a line: padding, never meaning (1-2 trailing spaces stay as they are)
_PADDING = re.compile(rb"[ \t]{16,}(?=\r?\n)")


def strip_ansi(text: str) -> str:
    """Remove colour and terminal control sequences; keep what a progress line settled on."""
    text = _ANSI.sub("", text).replace("\r\n", "\n")
    if "\r" not in text:
        return text
    return "\n".join(line.rsplit("\r", 1)[-1] for line in text.split("\n"))


class Capped:
    """Keeps the head and the tail of a byte stream and counts what fell in between."""

    def __init__(self, head: int, tail: int) -> None:
        self.head_limit, self.tail_limit = head, tail
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_size = 0
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        if b"    \n" in chunk:  # a formatter's padding to its column (xo, tsd: ~500 bytes a line)
            chunk = _PADDING.sub(b"", chunk)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
            if not chunk:
                return
        self.tail.append(chunk)
        self.tail_size += len(chunk)
        while self.tail_size - len(self.tail[0]) >= self.tail_limit:
            self.dropped += len(self.tail[0])
            self.tail_size -= len(self.tail.popleft())
        if self.tail_size > self.tail_limit and len(self.tail) == 1:
            cut = self.tail_size - self.tail_limit
            self.tail[0] = self.tail[0][cut:]
            self.tail_size -= cut
            self.dropped += cut

    def text(self, *, redacted: bool = False) -> str:
        middle = f"\n[... {self.dropped} bytes omitted ...]\n".encode() if self.dropped else b""
        data = bytes(self.head) + middle + b"".join(self.tail)
        text = strip_ansi(data.decode("utf-8", errors="replace"))
        # issue 12: redacted at capture, while a key block's lines still stand together
        return redact(text) if redacted else text

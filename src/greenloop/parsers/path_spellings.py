"""Output printed on Windows, read as the parsers read POSIX output.

On Windows a runner prints ``C:\\Users\\me\\proj\\pkg\\mod.py:12`` (pytest's native traces, node's
stacks), ``pkg\\mod.py:12`` (pytest's short traces, relative with ``os.sep``), ``.\\calc.go:8:2``
(go build), ``C:/Users/me/proj/calc.go:12`` (Go's runtime, forward slashes) or, under Git Bash's
own tools, ``/c/Users/me/proj/...``. Every parser's patterns expect POSIX paths (a drive's colon
reads as the ``path:line`` colon), so when the repository root is a Windows path the output's
paths are written the Git Bash way (``/c/Users/me/proj/pkg/mod.py``), the root too, and the
project's own files come out relative to it as on Linux. Only paths are touched; a Linux root
leaves the output as it is, and so are side files (JSON escapes a backslash: read as written).
"""

from __future__ import annotations

import re
import sys
from dataclasses import replace

from greenloop.parsers.model import ParserInput

_DRIVE_ROOT = re.compile(r"^(?P<drive>[A-Za-z]):[\\/]")
_MSYS_ROOT = re.compile(r"^/(?P<drive>[A-Za-z])(?:/|$)")
# A drive path up to what ends a path in a runner's line: a colon (":12"), a quote, a bracket,
# whitespace. Windows allows spaces in names; a runner's line cannot tell them from the text.
_DRIVE_PATH = re.compile(r"(?<![\w/\\])(?P<drive>[A-Za-z]):(?P<rest>[\\/][^\s:\"'<>|*?()\[\]]*)")
# A relative path with backslashes right before ":<line>" (pytest's short trace, go build).
_BACKSLASHED = re.compile(r"(?<![\w/\\.:-])(?P<path>(?:[\w.-]+\\)+[\w.-]+)(?=:\d)")


def windows_root(root: str, platform: str = sys.platform) -> bool:
    """Whether ``root`` is a Windows path (``C:\\…``, or ``/c/…`` where the host is Windows)."""
    if _DRIVE_ROOT.match(root):
        return True
    return platform in ("win32", "cygwin", "msys") and bool(_MSYS_ROOT.match(root))


def posix_path(path: str) -> str:
    """``C:\\Users\\me`` or ``C:/Users/me`` -> ``/c/Users/me``; a relative one gets slashes."""
    m = _DRIVE_ROOT.match(path)
    if m is None:
        return path.replace("\\", "/")
    return f"/{m['drive'].lower()}/{path[3:].replace(chr(92), '/')}".rstrip("/")


def posix_input(inp: ParserInput, platform: str = sys.platform) -> ParserInput:
    """``inp`` with its Windows paths written the Git Bash way; unchanged for a POSIX root."""
    if not inp.root or not windows_root(inp.root, platform):
        return inp
    root = posix_path(inp.root).rstrip("/")
    return replace(
        inp,
        root=root,
        stdout=posix_text(inp.stdout, root),
        stderr=posix_text(inp.stderr, root),
        merged=posix_text(inp.merged, root),
    )


def posix_text(text: str, root: str) -> str:
    """Every drive path and backslashed relative path in ``text`` written with slashes; a path
    inside ``root`` (case-insensitively: Windows' file systems are) spelled as ``root`` is."""
    if not text:
        return text
    text = _DRIVE_PATH.sub(lambda m: posix_path(m[0]), text)
    text = _BACKSLASHED.sub(lambda m: m["path"].replace("\\", "/"), text)  # go build's ".\\" too
    return re.sub(re.escape(root) + r"(?=/)", lambda _: root, text, flags=re.IGNORECASE)

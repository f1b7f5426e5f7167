"""The root's other spellings in a tool's output, written as the root: Windows paths, symlinks.

A folder reached through a symlink is printed either way: on macOS ``/tmp`` and ``/var/folders``
(``$TMPDIR``) are ``/private/tmp`` and ``/private/var/folders``, git names the repository by the
real path, and a tool that prints the shell's logical ``$PWD`` names its files by the other.
ParserInput.root_aliases lists those spellings; each is written as the root before parsing.

Output printed on Windows, read as the parsers read POSIX output:

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

import os
import re
import sys
from collections.abc import Callable
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


def one_root(inp: ParserInput, platform: str = sys.platform) -> ParserInput:
    """``inp`` with the root spelled one way: its aliases as the root, Windows paths as Git Bash's."""
    return posix_input(unaliased(inp), platform)


def unaliased(inp: ParserInput) -> ParserInput:
    """Each of the root's other spellings, followed by ``/``, written as the root."""
    aliases = [a.rstrip("/") for a in inp.root_aliases if a.rstrip("/") and a != inp.root]
    if not inp.root or not aliases:
        return inp
    # a whole path's start only: /tmp/p is an alias, /private/tmp/p/x holds it and is the root
    spelled = re.compile(r"(?<![\w./-])(?:" + "|".join(map(re.escape, aliases)) + r")(?=/)")

    def rewrite(text: str) -> str:
        return spelled.sub(lambda _: inp.root.rstrip("/"), text) if text else text

    return replace(
        inp, stdout=rewrite(inp.stdout), stderr=rewrite(inp.stderr), merged=rewrite(inp.merged)
    )


def root_aliases(
    root: str, pwd: str, realpath: Callable[[str], str] = os.path.realpath
) -> tuple[str, ...]:
    """The spellings of ``root`` other than its own a tool run there may print: the logical
    ``$PWD`` (or its ancestor) that resolves to it, and ``root`` without macOS's ``/private``."""
    found: list[str] = []
    if pwd.startswith("/") and realpath(pwd) != pwd:
        real = realpath(pwd)
        if real == root or real.startswith(root.rstrip("/") + "/"):
            below = real[len(root.rstrip("/")) :]
            if pwd.endswith(below):
                found.append(pwd[: len(pwd) - len(below)] if below else pwd)
    for top in ("/private/tmp/", "/private/var/", "/private/etc/"):
        short = root[len("/private") :]
        if root.startswith(top) and realpath(short) == root:
            found.append(short)
    return tuple(dict.fromkeys(a for a in found if a != root))


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

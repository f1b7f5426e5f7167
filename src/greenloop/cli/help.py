"""``--help`` as fast as ``--version`` (issue 16): argparse's text, rendered once and kept.

Building the parser (a dozen subcommands, ~70 options, a help formatter per option) costs more
than starting Python. The rendered text is kept under ``$XDG_CACHE_HOME/greenloop/help/`` keyed by
greenloop's version, the size and mtime of every module of the package (so an edited or upgraded
greenloop never shows stale help), the terminal width and the locale.
"""

from __future__ import annotations

import io
import os
import zlib

from greenloop import __version__

TYPE_CHECKING = False  # see cli.py: typing is not imported on the way to --help
if TYPE_CHECKING:
    from collections.abc import Callable

# os.path and zlib, not pathlib and hashlib: this module exists to keep start-up cheap.
PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOCALE_VARS = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")


def help_request(argv: list[str]) -> bool:
    """``-h``/``--help`` alone, or after one subcommand word."""
    if not argv or argv[-1] not in ("-h", "--help"):
        return False
    return len(argv) == 1 or (len(argv) == 2 and not argv[0].startswith("-"))


def cached_help(argv: list[str], render: Callable[[], str]) -> str:
    """The help text for ``argv``, from the cache or rendered (and kept) now."""
    key = _key(argv)
    path = os.path.join(_cache_dir(), f"{zlib.crc32(key.encode()):08x}.txt")
    try:
        with open(path, encoding="utf-8") as f:
            kept, text = f.read().split("\0\n", 1)
        if kept == key:  # the file name is a short checksum; the whole key decides
            return text
    except (OSError, ValueError):
        pass
    text = render()
    if not text:
        return ""  # not help after all (an unknown command): the caller parses and complains
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(f"{key}\0\n{text}")
        os.replace(tmp, path)
    except OSError:
        pass
    return text


def render_with(parse: Callable[[list[str]], object], argv: list[str]) -> str:
    """What ``parse(argv)`` prints as it exits 0 (argparse's help); "" when it fails instead."""
    import contextlib

    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            parse(argv)
    except SystemExit as exc:
        return out.getvalue() if exc.code in (0, None) else ""
    return ""


def _cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "greenloop", "help")


def _key(argv: list[str]) -> str:
    parts = [__version__, *argv, str(_columns())]
    parts += [os.environ.get(name, "") for name in LOCALE_VARS]
    return "\n".join(parts + _sources(PACKAGE))


def _columns() -> int:
    """argparse's width: $COLUMNS, else the terminal's (shutil.get_terminal_size's order)."""
    try:
        return int(os.environ.get("COLUMNS", ""))
    except ValueError:
        pass
    try:
        return os.get_terminal_size(1).columns
    except OSError:
        return 80


def _sources(directory: str) -> list[str]:
    found = []
    for entry in os.scandir(directory):
        if entry.is_dir() and entry.name != "__pycache__" and not entry.name.startswith("."):
            found += _sources(entry.path)
        elif entry.name.endswith(".py"):
            info = entry.stat()
            found.append(f"{entry.path}:{info.st_size}:{info.st_mtime_ns}")
    return sorted(found)

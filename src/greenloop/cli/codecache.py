"""The code ``@dataclass`` compiles, kept between greenloop's processes (issue 16).

On Python 3.11 and 3.12, ``@dataclass`` writes each class's ``__init__``, ``__repr__``, ``__eq__``,
``__hash__``, ``__setattr__`` and ``__delattr__`` as source text and compiles it with ``exec`` when
the class is defined: six compilations per frozen class, in every process. For the Stop hook, which
starts on every agent turn, that was a quarter of its own instructions (callgrind: 78M of 306M,
``bench/hook_instructions.py``). The texts are the same in every process, so their compiled code is
kept in the user's cache, as Python keeps a module's bytecode in ``__pycache__``, one file per
Python build: ``exec`` of the cached code object does what ``exec`` of the text does (compiled with
the same file name, and with no ``__future__`` flags of ours: ``dont_inherit``).

Installed only by the command line's entry point, never by ``import greenloop``: it puts a name
``exec`` in the ``dataclasses`` module's namespace for the rest of the process, which a library
must not do to the program that imports it.
"""

from __future__ import annotations

import builtins
import marshal
import os
import sys
from contextlib import suppress
from types import CodeType

from greenloop.cachedir import user_cache

MAX_ENTRIES = 4096
"""A store grown past this starts again from the texts of the process that writes it."""

_CODE: dict[str, CodeType] = {}
_NEW: list[str] = []
_STORE: list[str] = []


def install(command: str) -> None:
    """From now on, ``dataclasses`` compiles through the cache (loaded here, once).

    One store per subcommand: the Stop hook loads the ~140 texts it needs, not the ~800 that
    ``run`` and ``report`` (rich, the agents) add."""
    import dataclasses

    if "exec" in vars(dataclasses):  # installed already, or a Python whose dataclasses has one
        return
    _STORE[:] = [_path(command if command.isalpha() else "other")]
    _CODE.update(_load())
    dataclasses.exec = _exec  # type: ignore[attr-defined]


def save() -> None:
    """Write the store if this process compiled a text it did not hold (atomically; best effort)."""
    path = _STORE[0] if _STORE else ""
    if not _NEW or not path:
        return
    code = _CODE if len(_CODE) <= MAX_ENTRIES else {text: _CODE[text] for text in _NEW}
    partial = f"{path}.{os.getpid()}"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(partial, "wb") as handle:
            handle.write(marshal.dumps(code))
        os.replace(partial, path)
        _NEW.clear()
    except OSError:
        with suppress(OSError):
            os.unlink(partial)


def compiled_here() -> int:
    """How many texts this process compiled (the rest came from the store)."""
    return len(_NEW)


def _exec(
    source: str | bytes | CodeType,
    globals: dict[str, object] | None = None,
    locals: dict[str, object] | None = None,
    /,
) -> None:
    if isinstance(source, str):
        code = _CODE.get(source)
        if code is None:
            code = compile(source, "<string>", "exec", dont_inherit=True)
            _CODE[source] = code
            _NEW.append(source)
        source = code
    builtins.exec(source, globals, locals)


def _load() -> dict[str, CodeType]:
    path = _STORE[0]
    if not path:
        return {}
    try:
        with open(path, "rb") as handle:
            data = marshal.loads(handle.read())
    except (OSError, EOFError, ValueError, TypeError):
        return {}  # missing, unreadable or damaged: compiled again, then written anew
    if not isinstance(data, dict):
        return {}
    return {
        text: code
        for text, code in data.items()
        if isinstance(text, str) and isinstance(code, CodeType)
    }


def _path(command: str) -> str:
    cache = user_cache()
    if cache is None:
        return ""
    build = f"{sys.implementation.cache_tag}-{sys.hexversion:x}"
    return os.path.join(cache, "code", f"dataclasses-{build}-{command}.marshal")

"""greenloop's folders: the user's cache directory (``$XDG_CACHE_HOME``, else ``~/.cache``), and a
repository's own folder for the Stop hook's state and the verification cache."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def user_cache(environ: Mapping[str, str] = os.environ) -> Path | None:
    """``<cache>/greenloop``; None when neither ``XDG_CACHE_HOME`` nor ``HOME`` is set."""
    base = environ.get("XDG_CACHE_HOME") or (
        os.path.join(environ["HOME"], ".cache") if environ.get("HOME") else ""
    )
    return Path(base) / "greenloop" if base else None


def repo_dir(common_dir: Path, environ: Mapping[str, str] = os.environ) -> Path | None:
    """``<git common dir>/greenloop``, or, when this user cannot write the git dir (a read-only
    mount, another user's repository), a folder of the repository's own in the user's cache: the
    hook and ``check --cache`` still work there. None when neither can be had."""
    own = common_dir / "greenloop"
    if os.access(own if own.is_dir() else common_dir, os.W_OK):
        return own
    cache = user_cache(environ)
    return cache / "repos" / path_key(common_dir) if cache is not None else None


def path_key(path: Path) -> str:
    """A folder name of the user's cache that stands for ``path``."""
    import hashlib  # only here: ~2 ms of OpenSSL set-up the hook's usual path never pays

    return hashlib.sha256(os.fsencode(path)).hexdigest()[:16]

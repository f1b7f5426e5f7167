"""greenloop's folder in the user's cache directory (``$XDG_CACHE_HOME``, else ``~/.cache``)."""

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

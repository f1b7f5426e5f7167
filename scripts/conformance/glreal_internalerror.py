"""A pytest plugin for the ground truth of an INTERNALERROR (pytest exit 3), loaded with ``-p``.

pytest passes the exception that stopped its session to the ``pytest_internalerror`` hook; this
writes its type, message and every traceback entry (path, line, whether the file is the standard
library's) as JSON to ``$GLREAL_INTERNALERROR``. python.py decides from it whose code raised:
the deepest frame outside the standard library in the checkout (not a venv, tox or nox env) is
the project's. Stdlib only; copied alone into a temporary directory put on PYTHONPATH.
"""

from __future__ import annotations

import json
import os
import sysconfig
from typing import Any

STDLIB = tuple(
    os.path.realpath(p) + os.sep
    for p in {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]}
)


def pytest_internalerror(excrepr: Any, excinfo: Any) -> None:
    out = os.environ.get("GLREAL_INTERNALERROR")
    if not out:
        return
    frames = []
    for entry in excinfo.traceback:
        path = str(entry.path)
        real = os.path.realpath(path)
        stdlib = path.startswith("<") or (real.startswith(STDLIB) and "-packages" not in real)
        frames.append({"path": path, "line": entry.lineno + 1, "stdlib": stdlib})
    record = {"type": excinfo.type.__name__, "message": str(excinfo.value), "frames": frames}
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(record, handle)

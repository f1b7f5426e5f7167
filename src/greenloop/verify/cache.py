"""Reuse a green, trusted verifier run while nothing it could see has changed (issue 16).

The key is a sha256 over greenloop's version, HEAD's commit, the content of every changed tracked and
every untracked, non-ignored file (one ``git status --porcelain=v2 -z --branch``, run on a private
copy of the index), the resolved stages and the environment knobs that change a run. Entries live
under ``<git common dir>/greenloop/cache/`` (in the user's cache when this user cannot write the
git dir: ``cachedir.repo_dir``), one file per key. Only a green run is reused, only within its
time-to-live, and never for a key whose verdict has flipped (flaky) or whose tests were re-run by
the runner itself.
"""

from __future__ import annotations

import json
import os
import re
import stat
import time
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import asdict, dataclass
from pathlib import Path

from greenloop import __version__
from greenloop.detect.stages import Cascade
from greenloop.git import dot_git_dir, status_for_key
from greenloop.porcelain import changed_paths

try:  # CPython's own SHA-256: hashlib loads OpenSSL first, ~2 ms of every Stop hook (issue 16)
    from _sha256 import sha256  # type: ignore[import-not-found, unused-ignore]
except ImportError:  # Python 3.12 renamed it _sha2; any other interpreter: hashlib's
    from hashlib import sha256

TYPE_CHECKING = False  # not typing's: the Stop hook imports this module on every agent turn
if TYPE_CHECKING:
    from typing import BinaryIO

# Variables a verifier run depends on beyond the tree: the interpreter and tools found, the
# options test runners read from the environment. Every GREENLOOP_* variable counts too.
ENV_KNOBS = (
    "PATH",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTEST_ADDOPTS",
    "PYTEST_PLUGINS",
    "NODE_OPTIONS",
    "NODE_ENV",
    "NODE_PATH",
    "GOFLAGS",
    "GOPATH",
    "RUSTFLAGS",
    "CARGO_TARGET_DIR",
    "CI",
)
HASH_LIMIT = 16 * 1024 * 1024
"""Files larger than this are keyed by size, mtime and inode instead of their content."""
MAX_INDEX_COPY = 64 * 1024 * 1024
"""A bigger index is read in place: copying it would cost more than re-hashing racy files."""
KEEP_S = 24 * 3600.0
"""Entries older than this are deleted when a new one is written."""
PRUNE_EVERY_S = 3600.0
# pytest-rerunfailures' summary ("1 passed, 2 rerun"): the runner itself saw a flaky test.
_RERUN = re.compile(r"\b\d+ rerun\b")


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    """One verifier run, remembered under its key."""

    key: str
    verdict: str
    at: float
    """Wall-clock time (epoch seconds) the run started."""
    duration_s: float
    flaky: bool = False
    """This key's verdict flipped, or the runner re-ran a test: never reused."""
    summary: str = ""
    """One line for the reply: what passed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Reuse:
    """A cached green run the current tree may reuse, and how old it is."""

    entry: Entry
    age_s: float

    def describe(self) -> str:
        stamp = time.strftime("%H:%M:%S", time.localtime(self.entry.at))
        return (
            f"green, reused: the verified run of {stamp} ({_age(self.age_s)} ago) saw this exact "
            f"tree, stages and environment. {self.entry.summary}"
        ).strip()

    def as_json(self) -> dict[str, object]:
        return {"at": self.entry.at, "age_s": round(self.age_s, 1), "key": self.entry.key}


def _age(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def compute_key(
    root: Path,
    cascade: Cascade,
    *,
    timeout: float,
    all_stages: bool,
    environ: Mapping[str, str] = os.environ,
) -> str | None:
    """The key of what a verifier run would see now; None when the tree can't be keyed."""
    tree = tree_state(root)
    if tree is None:
        return None
    stages = [(s.name, s.display, s.fix, s.timeout) for s in cascade.stages]
    knobs = sorted(
        (k, v) for k, v in environ.items() if k in ENV_KNOBS or k.startswith("GREENLOOP_")
    )
    material = json.dumps([__version__, tree, stages, timeout, all_stages, knobs])
    return str(sha256(material.encode()).hexdigest())


def tree_state(root: Path) -> tuple[str, list[tuple[str, str]]] | None:
    """HEAD's commit and every changed or untracked file's content hash, from one git process."""
    status = status_for_key(root, index_file=private_index(root))
    if status.exit_code != 0:
        return None
    parsed = changed_paths(status.stdout)
    if parsed is None:
        return None
    head, changes = parsed
    return head, [(path, file_hash(root / path)) for path in changes]


def private_index(root: Path) -> Path | None:
    """A copy of the index for ``git status`` to refresh, named after the real index's identity.

    Without it, ``--no-optional-locks`` would make git re-hash every racily clean file (written in
    the second the index was) on every call: 50 ms instead of 13 on 5 000 files. The copy keeps the
    real index's mtime, so git's racy-entry checks judge it exactly as they judge the original.
    None (use the real index, read-only) when ``root`` holds no ``.git`` or copying fails."""
    git_dir = dot_git_dir(root)
    if git_dir is None:
        return None
    try:
        with (git_dir / "index").open("rb") as real:
            info = os.fstat(real.fileno())
            if info.st_size > MAX_INDEX_COPY:
                return None
            name = f"{info.st_ino}-{info.st_size}-{info.st_mtime_ns}"
            copy = git_dir / "greenloop" / "key-index" / name
            if not copy.exists():
                _copy_index(real, copy, info.st_mtime_ns)
    except OSError:
        return None
    return copy


def _copy_index(real: BinaryIO, copy: Path, mtime_ns: int) -> None:
    copy.parent.mkdir(parents=True, exist_ok=True)
    for old in os.scandir(copy.parent):  # copies of earlier indexes and their leftovers
        if not old.name.lstrip(".").startswith(copy.name):
            with suppress(OSError):
                os.unlink(old.path)
    tmp = copy.with_name(f".{copy.name}.{os.getpid()}")
    with tmp.open("wb") as out:
        while chunk := real.read(1 << 20):
            out.write(chunk)
    os.utime(tmp, ns=(mtime_ns, mtime_ns))
    os.replace(tmp, copy)


def file_hash(path: Path) -> str:
    try:
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            return "link:" + os.readlink(path)
        if not stat.S_ISREG(info.st_mode):
            return "other"
        if info.st_size > HASH_LIMIT:
            return f"stat:{info.st_size}:{info.st_mtime_ns}:{info.st_ino}:{info.st_mode}"
        with path.open("rb") as handle:
            digest = sha256()
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
        return f"{info.st_mode & 0o111:o}:{digest.hexdigest()}"
    except FileNotFoundError:
        return "deleted"
    except OSError as exc:
        return f"unreadable:{exc.errno}"


def lookup(directory: Path, key: str, *, ttl: float, now: float | None = None) -> Reuse | None:
    """The green, trusted, non-flaky run of this key within ``ttl`` seconds, if any."""
    entry = read_entry(directory, key)
    if entry is None or entry.verdict != "green" or entry.flaky:
        return None
    age = (time.time() if now is None else now) - entry.at
    return Reuse(entry=entry, age_s=age) if 0 <= age <= ttl else None


def read_entry(directory: Path, key: str) -> Entry | None:
    try:
        data = json.loads((directory / f"{key}.json").read_text(encoding="utf-8"))
        entry = Entry(**data)
    except (OSError, ValueError, TypeError):
        return None
    return entry if entry.key == key else None


def record(directory: Path, entry: Entry, *, output: str = "") -> Entry:
    """Remember a run; a verdict that differs from this key's last one marks the key flaky."""
    previous = read_entry(directory, entry.key)
    flipped = previous is not None and previous.verdict != entry.verdict
    rerun = bool(_RERUN.search(output[-4096:]))
    flaky = entry.flaky or rerun or flipped or (previous is not None and previous.flaky)
    stored = Entry(**(asdict(entry) | {"flaky": flaky}))
    tmp = directory / f".{entry.key}.{os.getpid()}"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(asdict(stored)), encoding="utf-8")
        os.replace(tmp, directory / f"{entry.key}.json")
    except OSError:  # a full disk, a folder gone read-only: the run's verdict stands, uncached
        with suppress(OSError):
            tmp.unlink()
        return stored
    _prune(directory, stored.at)
    return stored


def _prune(directory: Path, now: float) -> None:
    """Delete entries older than ``KEEP_S``, at most once an hour: a turn's write must not stat
    the day's hundreds of entries (issue 16)."""
    marker = directory / ".pruned"
    with suppress(OSError):
        if marker.stat().st_mtime > now - PRUNE_EVERY_S:
            return
    with suppress(OSError):
        marker.touch()
    for item in os.scandir(directory):
        try:
            if item.stat().st_mtime < now - KEEP_S:
                os.unlink(item.path)
        except OSError:
            continue

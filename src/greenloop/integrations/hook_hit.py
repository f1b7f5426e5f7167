"""The Stop hook's cache hit, answered before the rest of greenloop is imported.

The Stop hook runs on every agent turn, and most turns end on a tree whose green run is cached.
The full path pays for the configuration, the stage detection, the host's dataclasses, the code
cache and the subreaper before it finds that out (4.3x ``python -c pass`` in instructions). When
the full path answered a hit, it leaves a memo here: the exact reply it wrote, with the age of the
cached run left open, under a key of everything the hook read (its arguments, the host's payload,
the working directory, the environment). The next stop with the same key replays it after one
``git status`` shows the same tree, the session's state file says what the full path left in it,
and the cached run is still green, trusted and within its time-to-live; anything else goes the
full way, which writes a new memo. Imports only what Python's start-up loaded (``os``, ``sys``)
and ``json``: no dataclasses, no ctypes, no subprocess module.
"""

from __future__ import annotations

import json
import os
import sys
import time

from greenloop.porcelain import changed_paths

try:  # CPython's own SHA-256: hashlib loads OpenSSL first
    from _sha256 import sha256  # type: ignore[import-not-found, unused-ignore]
except ImportError:  # pragma: no cover - Python 3.12 renamed it _sha2
    from hashlib import sha256

AGE = "\x00age\x00"
"""Where the cached run's age goes in a memo's reply: the one part that moves between stops."""
KEEP_GIT_VARS = frozenset({"GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"})
STATUS = (
    "-c", "core.splitIndex=false", "status", "--porcelain=v2", "-z", "--branch",
    "--no-ahead-behind", "--untracked-files=all", "--ignore-submodules=none", "--no-renames",
)  # fmt: skip
"""The cache key's ``git status`` (``git.status_for_key`` on the private copy of the index)."""


def memo_path(argv: list[str], raw: bytes, environ: dict[str, str] | None = None) -> str | None:
    """Where the memo of this exact stop lives (the user's cache), None without a cache dir."""
    env = dict(os.environ if environ is None else environ)
    base = env.get("XDG_CACHE_HOME") or (
        os.path.join(env["HOME"], ".cache") if env.get("HOME") else ""
    )
    if not base:
        return None
    from greenloop import __version__

    kept = sorted((k, v) for k, v in env.items() if k not in PER_PROCESS)
    seen = json.dumps([__version__, argv, _payload_key(raw), os.getcwd(), kept])
    name = sha256(seen.encode()).hexdigest()[:32]
    return os.path.join(base, "greenloop", "hook-hits", f"{name}.json")


PER_TURN = ("last_assistant_message", "prompt_id")
"""Payload fields that change on every turn and that no part of the Stop hook reads (Claude Code
2.1.332 sends both): left out of the key, so the next turn's stop on the same tree can hit."""


PER_PROCESS = frozenset(
    {"CLAUDE_PID", "CLAUDE_CODE_MESSAGING_SOCKET", "CLAUDE_CODE_MESSAGING_TOKEN"}
)
"""Environment variables Claude Code 2.1.332 gives its hooks anew in each ``claude`` process (its
pid, its messaging socket and token; seen with ``claude -p --continue``), which the verification
never reads: left out of the key, so a session's next process can hit too."""


def _payload_key(raw: bytes) -> str:
    try:
        data = json.loads(raw)
    except ValueError:
        return raw.decode("latin-1")
    if not isinstance(data, dict):
        return raw.decode("latin-1")
    return json.dumps({k: v for k, v in data.items() if k not in PER_TURN}, sort_keys=True)


def answer(path: str) -> bool:
    """Write the memo's reply and return True when it holds for this stop; never raises."""
    try:
        with open(path, encoding="utf-8") as handle:
            memo = json.load(handle)
        age = _still_green(memo)
        if age is None or tree_digest(memo["root"], memo["git_dir"]) != memo["tree"]:
            return False
        sys.stdout.write(memo["stdout"].replace(AGE, age_text(age)))
        sys.stderr.write(memo["stderr"].replace(AGE, age_text(age)))
        return True
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def _still_green(memo: dict[str, object]) -> float | None:
    """The cached run's age when the memo's reply still stands (state, marker, entry), else None."""
    if _read(str(memo["state"])) != memo["state_text"]:
        return None
    if memo["told"] and not os.path.exists(str(memo["told"])):
        return None
    entry = json.loads(_read(str(memo["entry"])) or "null")
    if not isinstance(entry, dict) or entry.get("verdict") != "green" or entry.get("flaky"):
        return None
    age = time.time() - float(entry["at"])
    return age if 0 <= age <= float(str(memo["ttl"])) else None


def age_text(seconds: float) -> str:
    """As ``verify.cache.Reuse.describe`` says it."""
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        return ""


def tree_digest(root: str, git_dir: str) -> str | None:
    """The cache key's view of the tree (HEAD, every changed and untracked file's content), from
    one ``git status`` on the key's private index; None when it cannot be had."""
    info = os.stat(os.path.join(git_dir, "index"))
    name = f"{info.st_ino}-{info.st_size}-{info.st_mtime_ns}"
    index = os.path.join(git_dir, "greenloop", "key-index", name)
    if not os.path.exists(index):
        return None  # the full path copies it
    out = _git_status(root, index)
    parsed = changed_paths(out.decode("utf-8", "surrogateescape")) if out is not None else None
    if parsed is None:
        return None
    digest = sha256(out or b"")
    for rel in parsed[1]:
        digest.update(b"\0" + _content(os.path.join(root, rel)))
    return str(digest.hexdigest())


def _content(path: str) -> bytes:
    try:
        if os.path.islink(path):
            return b"link:" + os.fsencode(os.readlink(path))
        with open(path, "rb") as handle:
            return bytes(sha256(handle.read()).digest())
    except OSError as exc:
        return f"unreadable:{exc.errno}".encode()


def _git_status(root: str, index: str) -> bytes | None:
    """``git status`` through ``posix_spawn`` and a pipe: the subprocess module is not imported."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k in KEEP_GIT_VARS}
    env |= {"GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "LC_ALL": "C", "GIT_INDEX_FILE": index}
    read, write = os.pipe()
    null = os.open(os.devnull, os.O_RDWR)
    try:
        actions = [
            (os.POSIX_SPAWN_DUP2, null, 0),
            (os.POSIX_SPAWN_DUP2, write, 1),
            (os.POSIX_SPAWN_DUP2, null, 2),
        ]
        pid = os.posix_spawnp("git", ["git", "-C", root, *STATUS], env, file_actions=actions)
    finally:
        os.close(write)
        os.close(null)
    chunks = []
    with os.fdopen(read, "rb") as pipe:
        while chunk := pipe.read(1 << 16):
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    return b"".join(chunks) if os.waitstatus_to_exitcode(status) == 0 else None


def remember(path: str, reply: tuple[str, str], hit: dict[str, object]) -> None:
    """After the full path answered a cache hit: the memo for the next same stop (best effort),
    at ``memo_path`` as the process found it when it started. ``hit`` holds what that answer
    rested on (``claude_hook.handle``); ``reply`` the redacted stdout and stderr it wrote."""
    try:
        shown = f"({hit['age']} ago)"
        if sum(text.count(shown) for text in reply) != 1:
            return
        tree = tree_digest(str(hit["root"]), str(hit["git_dir"]))
        if tree is None:
            return
        memo = {
            **{k: v for k, v in hit.items() if k != "age"},
            "tree": tree,
            "stdout": reply[0].replace(shown, f"({AGE} ago)"),
            "stderr": reply[1].replace(shown, f"({AGE} ago)"),
        }
        os.makedirs(os.path.dirname(path), exist_ok=True)
        partial = f"{path}.{os.getpid()}"
        with open(partial, "w", encoding="utf-8") as handle:
            json.dump(memo, handle)
        os.replace(partial, path)
    except (OSError, ValueError, KeyError, TypeError):
        return

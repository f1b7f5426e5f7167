"""The built-in agent's file tools, every path confined to the repository.

Safety (issue 5): a path is resolved against the repository root and must stay inside it after
symlinks are followed; absolute paths, ``..`` and anything under ``.git/`` are refused as tool
errors before any byte is read or written. There is no shell tool; nothing the model says runs.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_READ_LINES = 400
MAX_OUTPUT_CHARS = 24_000
MAX_LIST_ENTRIES = 300
MAX_HITS = 50
MAX_SEARCH_BYTES = 1_000_000
SEARCH_TIME_S = 10.0
# A quantified group whose body repeats or alternates: (a+)+, (a|aa)*, (\w+\s?){2,}
_NESTED_REPEAT = re.compile(r"\((?:[^()\\]|\\.)*(?:[+*}|])(?:[^()\\]|\\.)*\)[+*{]")
SKIP_DIRS = frozenset(
    {".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".nox", ".mypy_cache",
     ".pytest_cache", ".ruff_cache", ".greenloop", "target", ".idea", ".eggs"}
)  # fmt: skip


class ToolError(Exception):
    """A refused or failed tool call; its message goes back to the model."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult:
    """One answered tool call."""

    text: str
    ok: bool
    edited: str = ""
    """The repo-relative path written, when the call changed a file."""
    finished: str | None = None
    """The ``finish`` summary, when the model called ``finish``."""


def resolve_inside(root: Path, rel: object) -> Path:
    """``rel`` as a path inside ``root`` (symlinks followed), or ToolError."""
    if not isinstance(rel, str) or not rel.strip():
        raise ToolError("path must be a non-empty string relative to the repository root")
    if "\0" in rel:
        raise ToolError("refused: a path cannot contain a NUL byte")
    if Path(rel).is_absolute():
        raise ToolError(
            f"refused {rel!r}: absolute paths are not allowed; use a repo-relative path"
        )
    if ".." in Path(rel).parts:
        raise ToolError(f"refused {rel!r}: '..' is not allowed; paths stay inside the repository")
    base = root.resolve()
    try:
        path = (base / rel).resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop: RuntimeError up to 3.12
        raise ToolError(f"refused {rel!r}: {exc}") from None
    if not path.is_relative_to(base):
        raise ToolError(f"refused {rel!r}: it resolves outside the repository (symlink?)")
    # .GIT is .git on a case-insensitive file system (macOS, Windows): refused the same
    if any(part.lower() == ".git" for part in (Path(rel).parts + path.relative_to(base).parts)):
        raise ToolError(f"refused {rel!r}: nothing under .git/ may be read or changed")
    return path


def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root.resolve()).as_posix() or "."


def _read_text(path: Path) -> str:
    if not path.is_file():
        raise ToolError(f"{path.name}: no such file")
    with open(path, "rb") as handle:
        data = handle.read(MAX_SEARCH_BYTES * 4)  # bounded, whatever the file's size
    if b"\0" in data[:8192]:
        raise ToolError(f"{path.name}: binary file, not shown")
    return data.decode("utf-8", "replace")


def _cap(text: str) -> str:
    if len(text) <= MAX_OUTPUT_CHARS:
        return text
    return text[:MAX_OUTPUT_CHARS] + f"\n… [output capped at {MAX_OUTPUT_CHARS} characters]"


def number_lines(lines: list[str], first: int) -> str:
    return "\n".join(f"{n:>5}| {line}" for n, line in enumerate(lines, first))


def read_file(root: Path, path: str, start_line: int = 1, end_line: int | None = None) -> str:
    file = resolve_inside(root, path)
    lines = _read_text(file).splitlines()
    start = max(1, start_line)
    wanted = min(len(lines), end_line or len(lines))
    end = min(wanted, start + MAX_READ_LINES - 1)
    shown = number_lines(lines[start - 1 : end], start)
    if end < wanted:
        shown += f"\n… [{len(lines)} lines in all; ask for start_line={end + 1} to see more]"
    return _cap(shown or f"[{_rel(root, file)} is empty]")


def _is_venv(path: Path) -> bool:
    return (path / "pyvenv.cfg").is_file()


def walk_files(root: Path, top: Path) -> Iterator[Path]:
    """Files under ``top`` in sorted order, skipping VCS, caches, dependencies and venvs."""
    for dirpath, dirnames, filenames in os.walk(top):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not _is_venv(here / d))
        for name in sorted(filenames):
            yield here / name


def list_files(root: Path, path: str = ".", pattern: str | None = None) -> str:
    top = resolve_inside(root, path)
    if not top.is_dir():
        raise ToolError(f"{path}: not a directory")
    found: list[str] = []
    total = 0
    for file in walk_files(root, top):
        rel = _rel(root, file)
        if pattern and not (fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(file.name, pattern)):
            continue
        total += 1
        if len(found) < MAX_LIST_ENTRIES:
            found.append(rel)
        elif total > 10 * MAX_LIST_ENTRIES:  # a huge tree: stop counting
            break
    more = total - len(found)
    if not more:
        return "\n".join(found) or "[no files]"
    count = f"over {more - 1}" if total > 10 * MAX_LIST_ENTRIES else str(more)
    return "\n".join([*found, f"… and {count} more (narrow with path or pattern)"])


def _matcher(pattern: str) -> re.Pattern[str]:
    if _NESTED_REPEAT.search(pattern):
        # a model's regex must not hang the run (``^(a+)+$`` backtracks for minutes): a repeated
        # group that itself repeats or alternates is searched for literally instead
        return re.compile(re.escape(pattern))
    try:
        return re.compile(pattern)
    except re.error:  # not a valid regex: search for it literally
        return re.compile(re.escape(pattern))


def search(root: Path, pattern: str, path: str = ".", *, deadline: float | None = None) -> str:
    if not pattern:
        raise ToolError("pattern must not be empty")
    top = resolve_inside(root, path)
    files = [top] if top.is_file() else list(walk_files(root, top))
    regex, hits = _matcher(pattern), []
    stop_at = time.monotonic() + SEARCH_TIME_S
    stop_at = min(stop_at, deadline) if deadline is not None else stop_at
    for file in files:
        if time.monotonic() > stop_at:
            hits.append(f"… stopped after {SEARCH_TIME_S:g} s of searching; narrow the search")
            break
        try:  # every walked file is confined like read_file: no symlink out, nothing in .git
            real = resolve_inside(root, file.relative_to(root.resolve()).as_posix())
            if real.stat().st_size > MAX_SEARCH_BYTES:
                continue
            text = _read_text(real)
        except (ToolError, OSError, ValueError):
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if regex.search(line):
                hits.append(f"{_rel(root, file)}:{n}: {line.strip()[:200]}")
                if len(hits) >= MAX_HITS:
                    return "\n".join([*hits, f"… stopped at {MAX_HITS} matches; narrow the search"])
    return "\n".join(hits) or f"no matches for {pattern!r}"


def replace_text(text: str, old: str, new: str, where: str) -> str:
    """``text`` with the one exact occurrence of ``old`` replaced; ToolError unless unique."""
    if not old:
        raise ToolError("old must not be empty; use write_file to create a file")
    count = text.count(old)
    if count == 0:
        raise ToolError(
            f"old text not found in {where} (0 matches); read the file and copy the exact "
            "lines, including indentation"
        )
    if count > 1:
        raise ToolError(
            f"old text matches {count} times in {where}; include more surrounding lines "
            "so it matches exactly once"
        )
    return text.replace(old, new, 1)


def replace_in_file(root: Path, path: str, old: str, new: str) -> str:
    file = resolve_inside(root, path)
    text = _read_text(file)
    file.write_text(replace_text(text, old, new, path), encoding="utf-8")
    line = text[: text.index(old)].count("\n") + 1
    return f"replaced 1 occurrence in {_rel(root, file)} at line {line}"


def write_file(root: Path, path: str, content: str) -> str:
    file = resolve_inside(root, path)
    if file.is_dir():
        raise ToolError(f"{path}: is a directory")
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(content, encoding="utf-8")
    return f"wrote {len(content.splitlines())} lines to {_rel(root, file)}"


def _schema(description: str, required: tuple[str, ...], **props: str) -> dict[str, Any]:
    properties = {
        name: {"type": kind.split(":", 1)[0], "description": kind.split(":", 1)[1]}
        for name, kind in props.items()
    }
    return {
        "description": description,
        "parameters": {"type": "object", "properties": properties, "required": list(required)},
    }


SCHEMAS: Mapping[str, dict[str, Any]] = {
    "read_file": _schema(
        f"Read a text file with line numbers (at most {MAX_READ_LINES} lines per call).",
        ("path",),
        path="string:Path relative to the repository root.",
        start_line="integer:First line to show (1-based).",
        end_line="integer:Last line to show.",
    ),
    "list_files": _schema(
        "List files (skips .git, dependencies, caches and virtualenvs).",
        (),
        path="string:Directory relative to the repository root (default: the root).",
        pattern="string:Optional glob such as '*.py' or 'src/**/test_*.py'.",
    ),
    "search": _schema(
        f"Search file contents for a regex (or literal text); at most {MAX_HITS} matches.",
        ("pattern",),
        pattern="string:Python regular expression; invalid ones are searched literally.",
        path="string:File or directory to search (default: the whole repository).",
    ),
    "replace_in_file": _schema(
        "Replace one exact, unique occurrence of `old` with `new` in a file.",
        ("path", "old", "new"),
        path="string:Path relative to the repository root.",
        old="string:Exact existing text, with enough context to match exactly once.",
        new="string:Replacement text.",
    ),
    "write_file": _schema(
        "Create or overwrite a whole file.",
        ("path", "content"),
        path="string:Path relative to the repository root.",
        content="string:The complete new file content.",
    ),
    "finish": _schema(
        "Call when your edit is complete.",
        ("summary",),
        summary="string:One line describing the change (becomes the commit message).",
    ),
}
EDITING = frozenset({"replace_in_file", "write_file"})
_TYPES: Mapping[str, type] = {"string": str, "integer": int}


def tool_specs() -> list[dict[str, Any]]:
    """The chat-completions ``tools`` parameter."""
    return [{"type": "function", "function": {"name": n, **s}} for n, s in SCHEMAS.items()]


def _check_args(name: str, raw: str) -> dict[str, Any]:
    if name not in SCHEMAS:
        raise ToolError(f"unknown tool {name!r}; available: {', '.join(SCHEMAS)}")
    try:
        args = json.loads(raw or "{}")
    except ValueError as exc:
        raise ToolError(f"arguments are not valid JSON ({exc}); send a JSON object") from None
    if not isinstance(args, dict):
        raise ToolError("arguments must be a JSON object")
    params = SCHEMAS[name]["parameters"]
    missing = [p for p in params["required"] if p not in args]
    if missing:
        raise ToolError(f"{name} is missing required argument(s): {', '.join(missing)}")
    for key, value in args.items():
        kind = params["properties"].get(key, {}).get("type")
        if kind is None:
            raise ToolError(f"{name} has no argument {key!r}")
        if not isinstance(value, _TYPES[kind]) or isinstance(value, bool):
            raise ToolError(f"{name}: argument {key!r} must be a {kind}")
    return args


_FUNCTIONS: Mapping[str, Callable[..., str]] = {
    "read_file": read_file,
    "list_files": list_files,
    "search": search,
    "replace_in_file": replace_in_file,
    "write_file": write_file,
}


def call_tool(
    root: Path, name: str, raw_arguments: str, *, deadline: float | None = None
) -> ToolResult:
    """Run one tool call; every problem becomes an error result the model can read.

    ``deadline`` (time.monotonic): the agent's timeout; a search stops there.
    """
    if deadline is not None and time.monotonic() > deadline:
        return ToolResult(text="error: the agent timeout is reached; no more tool calls", ok=False)
    try:
        args = _check_args(name, raw_arguments)
        if name == "finish":
            summary = " ".join(str(args["summary"]).split())
            return ToolResult(text="finished", ok=True, finished=summary)
        extra = {"deadline": deadline} if name == "search" else {}
        text = _FUNCTIONS[name](root, **args, **extra)
    except ToolError as exc:
        return ToolResult(text=f"error: {exc}", ok=False)
    except OSError as exc:
        return ToolResult(text=f"error: {exc.strerror or exc}", ok=False)
    except (ValueError, RuntimeError, RecursionError) as exc:
        # issue 12: a NUL byte, a lone surrogate, a symlink loop: the model is told, the run goes on
        return ToolResult(text=f"error: {type(exc).__name__}: {exc}", ok=False)
    edited = str(args["path"]) if name in EDITING else ""
    return ToolResult(text=text, ok=True, edited=edited)


_LOCATION = re.compile(r"(?<![\w/.-])((?:/|\./)?(?:[\w.@+-]+/)*[\w.@+-]+\.[A-Za-z0-9]+):(\d+)")


def mentioned_files(root: Path, text: str, limit: int = 3) -> list[tuple[str, int]]:
    """Repo files named as ``path:line`` in ``text`` (e.g. the digest's frames), first first."""
    base, seen = root.resolve(), dict[str, int]()
    for match in _LOCATION.finditer(text):
        raw = match.group(1)
        if Path(raw).is_absolute():  # a frame printed with its absolute path
            if not Path(raw).is_relative_to(base):
                continue
            raw = Path(raw).relative_to(base).as_posix()
        try:
            path = resolve_inside(root, raw)
        except ToolError:
            continue
        rel = _rel(root, path)
        if path.is_file() and rel not in seen:
            seen[rel] = int(match.group(2))
    return list(seen.items())[:limit]


def excerpt(root: Path, rel: str, line: int, max_lines: int = MAX_READ_LINES) -> str:
    """The whole file numbered, or a ``max_lines`` window around ``line`` when longer."""
    lines = _read_text(resolve_inside(root, rel)).splitlines()
    start = max(1, min(line - max_lines // 2, len(lines) - max_lines + 1))
    shown = number_lines(lines[start - 1 : start - 1 + max_lines], start)
    if len(lines) > max_lines:
        shown += f"\n… [{len(lines)} lines in all; read_file shows the rest]"
    return shown

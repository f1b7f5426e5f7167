"""TASKS.jsonl -> Task: every problem of every line at once, with its line number."""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from greenloop.errors import FatalError

ID_PATTERN = re.compile(r"[A-Za-z0-9._-]+")
KNOWN_KEYS = (
    "id",
    "repo",
    "ref",
    "task",
    "verifier",
    "setup",
    "agent",
    "max_iters",
    "timeout",
    "fail_to_pass",
    "pass_to_pass",
)
DECLARED = ("fail_to_pass", "pass_to_pass")
"""Declared acceptance (issue 28): test ids, in the runner's own form, that must go from red to
green and that must stay green (SWE-bench's FAIL_TO_PASS / PASS_TO_PASS)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Task:
    """One line of TASKS.jsonl."""

    id: str
    repo: str
    """A local path (resolved against the TASKS file's folder) or any URL ``git clone`` accepts."""
    ref: str | None = None
    task: str | None = None
    verifier: str | tuple[str, ...] | None = None
    """A shell string (run with ``sh -c``) or an argv list; None: the loop's detection."""
    setup: str | None = None
    agent: str | None = None
    max_iters: int | None = None
    timeout: float | None = None
    fail_to_pass: tuple[str, ...] = ()
    """Tests that must run and pass at the end (``greenloop run --must-pass``)."""
    pass_to_pass: tuple[str, ...] = ()
    """Tests that must run and still pass at the end."""
    line: int = 0
    fingerprint: str = ""
    """A digest of the line's content: a changed line for a finished id is reported."""

    @property
    def is_local(self) -> bool:
        return "://" not in self.repo and not _scp_like(self.repo)

    def to_json(self) -> dict[str, Any]:
        verifier = list(self.verifier) if isinstance(self.verifier, tuple) else self.verifier
        data = {k: getattr(self, k) for k in KNOWN_KEYS}
        data["verifier"] = verifier
        for key in DECLARED:
            data[key] = list(getattr(self, key)) or None
        return {k: v for k, v in data.items() if v is not None}


def load_tasks(path: Path) -> tuple[Task, ...]:
    """Read and validate TASKS.jsonl; raise FatalError listing every problem (exit 2)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FatalError(f"cannot read {path}: {exc}") from exc
    return parse_tasks(text, base=path.resolve().parent, name=path.name)


def parse_tasks(text: str, *, base: Path, name: str = "TASKS.jsonl") -> tuple[Task, ...]:
    tasks, problems = collect_tasks(text, base=base, name=name)
    raise_problems(problems)
    return tasks


def raise_problems(problems: list[str]) -> None:
    if problems:
        raise FatalError(f"{len(problems)} problem(s) in the tasks:\n" + "\n".join(problems))


def collect_tasks(
    text: str, *, base: Path, name: str = "TASKS.jsonl"
) -> tuple[tuple[Task, ...], list[str]]:
    """The lines that parse, and one problem line per fault of every line (a bad line's id too)."""
    tasks: list[Task] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        task, line_problems, task_id = _parse_line(raw, number, base)
        problems += [f"{name}:{number}: {p}" for p in line_problems]
        if task_id is not None and task_id in seen:
            problems.append(f"{name}:{number}: id {task_id!r} already used on line {seen[task_id]}")
            continue
        if task_id is not None:
            seen[task_id] = number
        if task is not None:
            tasks.append(task)
    if not tasks and not problems:
        problems.append(f"{name}: no tasks (one JSON object per line)")
    return tuple(tasks), problems


def _parse_line(raw: str, number: int, base: Path) -> tuple[Task | None, list[str], str | None]:
    """The line's task (None when it has a problem), its problems, and its id when it has one."""
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        return None, [f"not valid JSON ({exc.msg} at column {exc.colno})"], None
    if not isinstance(data, dict):
        return None, ["expected a JSON object"], None
    task_id = data["id"] if not _id(data.get("id"), "id") else None
    problems = [_unknown_key(k) for k in data if k not in KNOWN_KEYS]
    problems += [p for key, check in _CHECKS.items() if key in data for p in check(data[key], key)]
    problems += [f"{key!r} is required" for key in ("id", "repo") if key not in data]
    if problems:
        return None, problems, task_id
    return _task_of(data, number, base), [], task_id


def _unknown_key(key: str) -> str:
    close = [key.lower()] if key.lower() in KNOWN_KEYS else []  # SWE-bench's FAIL_TO_PASS
    close = close or difflib.get_close_matches(key, KNOWN_KEYS, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown key {key!r}{hint}; known keys: {', '.join(KNOWN_KEYS)}"


def _task_of(data: dict[str, Any], number: int, base: Path) -> Task:
    repo = str(data["repo"])
    if "://" not in repo and not _scp_like(repo):
        repo = str((base / repo).resolve())
    verifier = data.get("verifier")
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return Task(
        id=data["id"],
        repo=repo,
        ref=data.get("ref"),
        task=data.get("task"),
        verifier=tuple(verifier) if isinstance(verifier, list) else verifier,
        setup=data.get("setup"),
        agent=data.get("agent"),
        max_iters=data.get("max_iters"),
        timeout=float(data["timeout"]) if "timeout" in data else None,
        fail_to_pass=tuple(data.get("fail_to_pass", ())),
        pass_to_pass=tuple(data.get("pass_to_pass", ())),
        line=number,
        fingerprint=hashlib.sha256(canonical.encode()).hexdigest()[:16],
    )


def _scp_like(repo: str) -> bool:
    """``git@host:org/repo``: git's scp-like URL (a colon before any slash)."""
    head = repo.split("/", 1)[0]
    return ":" in head and not head.startswith("/")


def _text(value: Any, key: str) -> list[str]:
    ok = isinstance(value, str) and value.strip() != ""
    return [] if ok else [f"{key!r}: expected a non-empty string, got {value!r}"]


def _id(value: Any, key: str) -> list[str]:
    if isinstance(value, str) and ID_PATTERN.fullmatch(value):
        return []
    return [f"{key!r}: expected letters, digits, '.', '_' or '-', got {value!r}"]


def _verifier(value: Any, key: str) -> list[str]:
    if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
        return []
    if isinstance(value, str) and value.strip():
        return []
    return [f"{key!r}: expected a shell string or a non-empty list of strings, got {value!r}"]


def _positive_int(value: Any, key: str) -> list[str]:
    ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
    return [] if ok else [f"{key!r}: expected a positive whole number, got {value!r}"]


def _positive_number(value: Any, key: str) -> list[str]:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and value > 0
    return [] if ok else [f"{key!r}: expected a positive number of seconds, got {value!r}"]


def _test_ids(value: Any, key: str) -> list[str]:
    """A list of test ids (strings on one line), each once; SWE-bench's JSON-encoded string of a
    list is named as such (decode it first)."""
    if isinstance(value, str) and value.lstrip().startswith("["):
        return [
            f"{key!r}: expected a list of test ids, got a string (a JSON-encoded list: decode it)"
        ]
    if not isinstance(value, list) or not all(
        isinstance(v, str) and v.strip() and "\n" not in v for v in value
    ):
        return [f"{key!r}: expected a list of test ids (non-empty strings), got {value!r}"]
    twice = sorted({v for v in value if value.count(v) > 1})
    return [f"{key!r}: test id {v!r} listed twice" for v in twice]


_CHECKS = {
    "id": _id,
    "repo": _text,
    "ref": _text,
    "task": _text,
    "verifier": _verifier,
    "setup": _text,
    "agent": _text,
    "max_iters": _positive_int,
    "timeout": _positive_number,
    "fail_to_pass": _test_ids,
    "pass_to_pass": _test_ids,
}

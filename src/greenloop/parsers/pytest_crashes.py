"""pytest runs that ended without a report of their own: an xdist worker or the process killed
(faulthandler's dump), pytest-timeout's thread stacks, a start-up that failed before the session,
an INTERNALERROR, and the note for a run cut short."""

from __future__ import annotations

import re
from dataclasses import replace

from greenloop.parsers.model import (
    INTERNAL_ERROR,
    Failure,
    Frame,
    Kind,
    ParseResult,
    in_dependencies,
)
from greenloop.parsers.pytest_sections import HEAD, MAX_BLOCKS, id_file
from greenloop.parsers.pytraceback import parse_traceback, relative

WORKER_CRASH = re.compile(r"worker '(?P<worker>[^']+)' crashed while running '(?P<id>[^'\n]+)'")
# pytest-timeout's thread method (see with_thread_timeout)
_MAIN_STACK = re.compile(r"^~+ Stack of MainThread \(\d+\) ~+$", re.MULTILINE)
_STACK_END = re.compile(r"^(?:~+ Stack of |\++ Timeout \++$)", re.MULTILINE)
_TIMEOUT_LIMIT = re.compile(r"^timeout: (?P<limit>[\d.]+s)$", re.MULTILINE)
_STARTUP_TRACEBACK = "Traceback (most recent call last):"
_CONFTEST_ERROR = re.compile(r"^ImportError while loading conftest '(?P<path>[^']+)'\.$", re.M)
_SESSION_BANNER = "test session starts"
_INTERNAL = "INTERNALERROR> "
_FATAL = re.compile(r"^Fatal Python error: (?P<what>[^\n]+)$", re.MULTILINE)
_DUMP_FRAME = re.compile(r'^ +File "(?P<file>[^"\n]+)", line (?P<line>\d+) in (?P<func>\S+)$', re.M)
_PROGRESS = re.compile(r"^(?P<file>\S+\.py) [.FEsxXR]*[ \t]*$", re.MULTILINE)


def with_thread_timeout(result: ParseResult, text: str, root: str) -> ParseResult:
    """pytest-timeout's thread method: past the limit it prints every thread's stack between two
    ``Timeout`` banners and ends the process, no report, no summary. The test it was in is not
    killed from outside but hung (the code's to fix): a failing test whose frames are the main
    thread's stack, where the agent's loop sits."""
    banner = text.find("+ Timeout +")  # after a progress dot on the test's line: not anchored
    main = _MAIN_STACK.search(text, banner) if banner >= 0 else None
    if main is None:
        return result
    end = _STACK_END.search(text, main.end())
    stack = text[main.end() : end.start() if end else len(text)].splitlines()
    frames = parse_traceback(stack, root).frames
    # the repository's frames (made relative to it): not pytest's script, the stdlib, the venv
    own = [f for f in frames if not f.file.startswith(("<", "/")) and not in_dependencies(f.file)]
    if not own:
        return result
    hung = result.killed[0] if result.killed else f"{own[0].file}::{own[0].function}"
    limit = _TIMEOUT_LIMIT.search(text[:HEAD])
    over = f" (>{limit['limit']})" if limit else ""
    failure = Failure(
        kind=Kind.TEST,
        id=hung,
        file=own[-1].file,
        line=own[-1].line,
        error_type="Timeout",
        message=f"Timeout{over} from pytest-timeout: the test hung here; the run ended with it",
        frames=tuple(own),
    )
    killed = tuple(k for k in result.killed if k != hung)
    return replace(result, failures=(failure, *result.failures), killed=killed)


def find_crashes(text: str, root: str) -> tuple[list[Failure], tuple[str, ...]]:
    """xdist workers that died, and a process killed by a fatal signal (faulthandler's dump)."""
    killed = [m["id"] for m in WORKER_CRASH.finditer(text)] if "' crashed while" in text else []
    failures: list[Failure] = []
    fatal = _FATAL.search(text) if "Fatal Python error: " in text else None
    if fatal is not None:
        dump = [
            m for m in _DUMP_FRAME.finditer(text, fatal.end()) if m.start() - fatal.end() < 200_000
        ]
        frames = tuple(
            Frame(file=relative(m["file"], root), line=int(m["line"]), function=m["func"])
            for m in reversed(dump[:MAX_BLOCKS])
        )
        node_id = _crashed_test(frames, text)
        killed.append(node_id)
        failures.append(
            Failure(
                kind=Kind.CRASH,
                id=node_id,
                file=id_file(node_id),
                line=next((f.line for f in reversed(frames) if node_id.startswith(f.file)), None),
                error_type=fatal["what"].strip(),
                message=fatal.group(0).strip(),
                frames=frames,
            )
        )
    return failures, tuple(dict.fromkeys(killed))


def startup_crash(text: str, root: str) -> list[Failure]:
    """pytest stopped before its session began, with no report: its conftest would not import
    (click's tests/conftest.py imports click, and a SyntaxError seeded in src/click/utils.py ends
    there, exit 4), or pytest died importing itself (pluggy's own suite: pytest imports the
    pluggy under test). The traceback names the line."""
    conftest = _CONFTEST_ERROR.search(text)
    if conftest is not None:
        start, name = conftest.end(), relative(conftest["path"], root)
        what = f"pytest could not load {name}: no test ran"
    else:
        start, name, what = (
            text.find(_STARTUP_TRACEBACK),
            "pytest",
            "pytest could not start: no test ran",
        )
    if start < 0 or _SESSION_BANNER in text[:start]:
        return []
    tb = parse_traceback(text[start:].splitlines(), root)
    if not tb.error_type:
        return []
    last = tb.frames[-1] if tb.frames else None
    return [
        Failure(
            kind=Kind.CRASH,
            id=name,
            file=last.file if last else "",
            line=last.line if last else None,
            error_type=tb.error_type,
            message=tb.message,
            frames=tb.frames,
            detail=(what,),
        )
    ]


def with_internal_error(result: ParseResult, text: str, root: str) -> ParseResult:
    """The INTERNALERROR after the tests that failed before it, ahead of what it caused (the
    usage line optparse printed before exiting, warnings)."""
    internal = _internal_error(text, root)
    if not internal:
        return result
    tests = tuple(f for f in result.failures if f.kind is Kind.TEST)
    others = tuple(f for f in result.failures if f.kind is not Kind.TEST)
    return replace(result, failures=(*tests, *internal, *others))


def _internal_error(text: str, root: str) -> list[Failure]:
    """pytest's INTERNALERROR (exit 3): an exception escaped its session, every line prefixed
    ``INTERNALERROR> ``. The place is the deepest frame outside the standard library: a project
    module raising SystemExit at import (mccabe's ``__main__`` guard flipped: optparse exits 2),
    the project's own plugin or conftest hook; or pytest's, a plugin's, a library's frame, which
    classify leaves an environment failure."""
    if _INTERNAL not in text:
        return []
    lines = [ln[len(_INTERNAL) :] for ln in text.splitlines() if ln.startswith(_INTERNAL)]
    tb = parse_traceback(lines, root)
    if not tb.error_type:
        return []
    mine = [f for f in tb.frames if not _standard_library(f.file)]
    where = mine[-1] if mine else (tb.frames[-1] if tb.frames else None)
    frames = tb.frames[: tb.frames.index(where) + 1] if where else ()
    return [
        Failure(
            kind=Kind.CRASH,
            id="pytest",
            file=where.file if where else "",
            line=where.line if where else None,
            code=INTERNAL_ERROR,
            error_type=tb.error_type,
            message=tb.message,
            frames=frames,
            detail=tb.detail,
        )
    ]


def _standard_library(file: str) -> bool:
    """``<frozen importlib._bootstrap>``, ``/usr/lib/python3.11/argparse.py``: not a package."""
    if file.startswith("<"):
        return True
    return file.startswith("/") and "/lib/python" in file and not in_dependencies(file)


def _crashed_test(frames: tuple[Frame, ...], text: str) -> str:
    progress = [m["file"] for m in _PROGRESS.finditer(text[:HEAD])]
    for frame in reversed(frames):  # innermost first
        if not frame.function.startswith("test"):
            continue
        file = frame.file
        for shown in reversed(progress):
            if file == shown or file.endswith("/" + shown):
                file = shown
                break
        return f"{file}::{frame.function}"
    return progress[-1] if progress else "pytest"


def incomplete_note(text: str) -> str:
    progress = [m["file"] for m in _PROGRESS.finditer(text[:HEAD])]
    where = f" while running {progress[-1]}" if progress else ""
    return f"pytest stopped without its closing summary{where}: the run is incomplete"

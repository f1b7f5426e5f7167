"""Python tracebacks as pytest (long/short/line/native) and unittest print them -> frames + exception.

Shared by the pytest, unittest and plugin-artifact parsers. Pure string work, never raises.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from greenloop.parsers.model import Frame

MAX_DETAIL = 15
MAX_FRAMES = 40
MAX_MESSAGE = 500

_NATIVE = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)(?:,? in (?P<func>.+))?$')
_SHORT = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+): in (?P<func>\S.*)$")
_LOC = re.compile(r"^(?P<file>[^\s:][^:]*\.\w+):(?P<line>\d+):(?: (?P<rest>.*))?$")
_E_LINE = re.compile(r"^E(?: +(?P<text>.*))?$")
_EXC = re.compile(r"^(?P<type>(?:[A-Za-z_]\w*\.)*[A-Z]\w*)(?:: ?(?P<msg>.*))?$")
_DEF = re.compile(r"^\s*(?:async\s+)?def (\w+)")
# An exception group as Python draws it: "  + Exception Group Traceback ...", "  | " lines, and
# "  +-+---- 1 ----" / "    +---- 2 ----" / "    +------" between its sub-exceptions.
_GROUP_START = re.compile(r"^\s*\+ Exception Group Traceback \(most recent call last\):\s*$")
_GROUP_BAR = re.compile(r"^\s*\| ?(?P<text>.*)$")
_GROUP_RULE = re.compile(r"^\s*\+-[+-]*(?: (?P<n>\d+|\.\.\.)[^-]*-+)?\s*$")
# The notes hypothesis adds under a bare ``AssertionError``: the example, never the message.
_DOCTEST_DIFF = "Differences ("
_DOCTEST_SAID = ("Expected:", _DOCTEST_DIFF)
HYPOTHESIS_NOTES = ("Falsifying ", "Failing test case:", "You can reproduce", "Explanation:")
_CHAIN = (
    "The above exception was the direct cause of the following exception:",
    "During handling of the above exception, another exception occurred:",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Traceback:
    """A Python traceback read from text: its frames and the exception that ended it."""

    frames: tuple[Frame, ...] = ()
    error_type: str = ""
    message: str = ""
    detail: tuple[str, ...] = ()
    location: Frame | None = None
    """The closing ``path:line: ErrorType`` line pytest prints under a failure."""


def relative(path: str, root: str) -> str:
    """A path inside ``root`` made relative to it; any other path unchanged."""
    if root:
        prefix = root.rstrip("/") + "/"
        if path.startswith(prefix):
            return path[len(prefix) :]
    return path


def split_exception(line: str) -> tuple[str, str]:
    """``pkg.Error: msg`` -> (``pkg.Error``, ``msg``); anything else -> ("", line)."""
    m = _EXC.match(line.strip())
    if m is None:
        return "", line.strip()
    return m["type"], (m["msg"] or "").strip()


def doctest_failure(
    lines: Sequence[str], error_type: str, message: str, detail: tuple[str, ...]
) -> tuple[str, str, tuple[str, ...]]:
    """pytest's doctest block: ``Expected: … Got: …`` as the message, or the exception it raised."""
    kind = error_type.rpartition(".")[2]
    if kind == "DocTestFailure":
        detail, message = _doctest_expected(lines)
    elif kind == "UnexpectedException":
        error_type, message = _doctest_raised(lines) or (error_type, message)
    return error_type, message, detail


def _doctest_raised(lines: Sequence[str]) -> tuple[str, str] | None:
    """``TypeError: msg``, the line above the block's closing ``README.rst:40: UnexpectedException``."""
    body = [line for line in lines if line.strip()]
    error_type, message = split_exception(body[-2]) if len(body) > 1 else ("", "")
    return (error_type, message) if error_type else None


def _doctest_expected(lines: Sequence[str]) -> tuple[tuple[str, ...], str]:
    """The example source, and ``Expected: ... Got: ...`` as the message; when pytest printed a
    diff instead (its default ``--doctest-report udiff``, for outputs over two lines), the diff's
    header is the message and its lines follow the source."""
    body = [line.rstrip() for line in lines if line.strip()][:-1]
    start = next((i for i, line in enumerate(body) if line.startswith(_DOCTEST_SAID)), len(body))
    source = _doctest_example(body[:start])
    if start < len(body) and body[start].startswith(_DOCTEST_DIFF):
        return tuple(source + body[start + 1 :][:MAX_DETAIL]), body[start].rstrip(":")
    message = " ".join(line.strip() for line in body[start:])
    return tuple(source + body[start:][:9]), message


def _doctest_example(context: list[str]) -> list[str]:
    """The failing example's lines (pytest numbers the file's lines up to it): from its ``>>>``
    on, not the prose above it (tabulate's README); the last 4 when no ``>>>`` is there."""
    prompt = next((i for i in range(len(context) - 1, -1, -1) if ">>>" in context[i]), None)
    if prompt is None:
        return context[-4:]
    return context[prompt:][:6]


class _Reader:
    """One pass over a failure block's lines."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.frames: list[Frame] = []
        self.pending: list[str] = []
        self.e_blocks: list[list[str]] = []
        self.in_e = False
        self.expect_source = False
        self.native_exc = ""
        self.native_detail: list[str] = []
        self.location: Frame | None = None

    def feed(self, line: str) -> None:
        if line.startswith(_CHAIN):
            self.frames, self.e_blocks, self.pending, self.native_exc = [], [], [], ""
            return
        e = _E_LINE.match(line)
        if e is not None:
            if not self.in_e:
                self.e_blocks.append([])
            self.in_e = True
            self.e_blocks[-1].append(e["text"] or "")
            return
        self.in_e = False
        if self.expect_source and line.startswith("    ") and self.frames:
            last = self.frames[-1]
            self.frames[-1] = Frame(
                file=last.file, line=last.line, function=last.function, source=line.strip()
            )
            self.expect_source = False
            return
        self.expect_source = False
        self._feed_frame(line)

    def _feed_frame(self, line: str) -> None:
        m = _NATIVE.match(line) or _SHORT.match(line)
        if m is not None:
            self._add(m["file"], m["line"], m["func"] or "", "")
            self.expect_source = True
            self.native_exc = ""  # a traceback of its own follows: its exception is a new one
            return
        loc = _LOC.match(line)
        if loc is not None:
            self._add(loc["file"], loc["line"], self._pending_def(), self._pending_source())
            self.location = self.frames[-1]
            rest = (loc["rest"] or "").strip()
            if rest:
                self.native_exc, self.native_detail = rest, []
            self.pending = []
            return
        # after the exception line, "Expected: x" (mock's message goes on) is its message, not another
        fresh = not self.native_exc and not line.startswith(HYPOTHESIS_NOTES)
        if self.frames and line and not line[0].isspace() and _EXC.match(line) and fresh:
            self.native_exc, self.native_detail = line.strip(), []
        elif self.native_exc and line.strip():
            self.native_detail.append(line.strip())
        self.pending.append(line)

    def _add(self, file: str, line: str, func: str, source: str) -> None:
        self.frames.append(
            Frame(file=relative(file, self.root), line=int(line), function=func, source=source)
        )

    def _pending_def(self) -> str:
        """The function holding the ``>`` line: the nearest ``def`` indented less than it (a
        function the test defines inside itself, click's ``def copy(item):``, ends above it)."""
        marked = next((t for t in reversed(self.pending) if t.startswith(">")), None)
        limit = _indent(" " + marked[1:]) if marked is not None else None
        for text in reversed(self.pending):
            m = _DEF.match(text)
            if m and (limit is None or _indent(text) < limit):
                return m.group(1)
        return ""

    def _pending_source(self) -> str:
        for text in reversed(self.pending):
            if text.startswith(">"):
                return text[1:].strip()
        return ""


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def parse_traceback(lines: Sequence[str], root: str = "") -> Traceback:
    """Frames (oldest first) of the final exception in a chain, its type, message and detail."""
    parts = _group_parts(lines)
    if parts:
        return _group_traceback(parts, root)
    reader = _Reader(root)
    for line in lines:
        reader.feed(line)
    frames = reader.frames
    error_type, message = "", ""
    detail: tuple[str, ...] = ()
    if reader.e_blocks:
        error_type, message, detail, extra = _read_e_block(reader.e_blocks[-1], root)
        frames = frames + extra
    elif reader.native_exc:
        detail = tuple(reader.native_detail[:MAX_DETAIL])
    if not error_type and reader.native_exc:
        error_type, native_message = split_exception(reader.native_exc)
        message = message or native_message
    return Traceback(
        frames=tuple(frames[-MAX_FRAMES:]),
        error_type=error_type,
        message=message[:MAX_MESSAGE],
        detail=detail,
        location=reader.location,
    )


def in_words(lines: Sequence[str], tb: Traceback) -> Traceback:
    """A collection error pytest states in words, with no traceback (``import file mismatch:``,
    then the two paths and a hint): its first line is the message, the rest the detail."""
    if tb.error_type or tb.message:
        return tb
    said = [line.strip() for line in lines if line.strip() and not line.startswith("_")]
    if not said:
        return tb
    return replace(tb, message=said[0][:MAX_MESSAGE], detail=tuple(said[1 : 1 + MAX_DETAIL]))


def _read_e_block(block: list[str], root: str) -> tuple[str, str, tuple[str, ...], list[Frame]]:
    """pytest's ``E   `` lines: the exception line, the diff lines, a SyntaxError's location."""
    extra: list[Frame] = []
    index = None
    for i, text in enumerate(block):
        native = _NATIVE.match(text)
        if native is not None:
            source = block[i + 1].strip() if i + 1 < len(block) else ""
            file = relative(native["file"], root)
            extra.append(Frame(file=file, line=int(native["line"]), source=source))
            continue
        if index is None and _exception_line(text):
            index = i
    if index is None:
        error_type, message = "", block[0].strip() if block else ""
        rest = block[1:]
    else:
        error_type, message = split_exception(block[index])
        rest = block[index + 1 :] if not extra else []
    detail = tuple(t.strip() for t in rest if t.strip())[:MAX_DETAIL]
    if not message and detail and not detail[0].startswith(HYPOTHESIS_NOTES):
        message, detail = detail[0], detail[1:]
    return error_type, message, detail, extra


def _exception_line(text: str) -> bool:
    m = _EXC.match(text.strip())
    return m is not None and (m["msg"] is not None or "." in m["type"] or m["type"][-1].isalnum())


def _group_parts(lines: Sequence[str]) -> list[list[str]]:
    """The group's own lines, then each sub-exception's, without the drawing; [] when none."""
    start = next((i for i, line in enumerate(lines) if _GROUP_START.match(line)), None)
    if start is None:
        return []
    parts: list[list[str]] = [[]]
    for line in lines[start + 1 :]:
        rule = _GROUP_RULE.match(line)
        bar = _GROUP_BAR.match(line) if rule is None else None
        if rule is not None and rule["n"]:
            parts.append([])
        elif bar is not None:
            parts[-1].append(bar["text"])
        elif rule is None and line.strip():
            break
    return parts


def _group_traceback(parts: list[list[str]], root: str) -> Traceback:
    """The group's type and message; the first sub-exception's frames below the group's (the
    deepest is where it raised); one detail line per sub-exception, then the first one's detail."""
    group = parse_traceback(parts[0], root)
    subs = [parse_traceback(part, root) for part in parts[1:] if part]
    first = subs[0] if subs else Traceback()
    summary = tuple(f"sub-exception {i}: {_one_line(sub)}" for i, sub in enumerate(subs, 1))
    return Traceback(
        frames=(group.frames + first.frames)[-MAX_FRAMES:],
        error_type=group.error_type,
        message=group.message,
        detail=(summary + first.detail)[:MAX_DETAIL],
        location=group.location,
    )


def _one_line(tb: Traceback) -> str:
    what = ": ".join(p for p in (tb.error_type, tb.message) if p) or "?"
    where = tb.frames[-1] if tb.frames else None
    return f"{what} (at {where.file}:{where.line})" if where else what

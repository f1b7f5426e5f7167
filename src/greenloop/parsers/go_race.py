"""The race detector's ``WARNING: DATA RACE`` reports (``go test -race``).

A report is two memory accesses (the one that raced, then the earlier one) and where their
goroutines were created, each a stack of ``pkg.func()`` / ``/abs/file.go:N +0x..`` pairs. The
test that ran it fails with only ``testing.go:NNNN: race detected during execution of test``:
the report is what says which code raced.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from greenloop.parsers.generic import relative, to_int
from greenloop.parsers.model import Frame

START = "WARNING: DATA RACE"
END = "=================="
DETECTED = "race detected during execution of test"
_ACCESS = re.compile(
    r"^(?P<what>[A-Z][\w ]*?) at 0x[0-9a-f]+ by (?P<who>main goroutine|goroutine \d+):$"
)
_CREATED = re.compile(r"^Goroutine (?P<n>\d+) \((?P<state>[\w ]+)\) created at:$")
_FN = re.compile(r"^  (?P<fn>\S.*)\(\)$")
_LOC = re.compile(r"^ {6}(?P<file>\S+\.(?:go|s)):(?P<line>\d+)(?: \+0x[0-9a-f]+)?$")


@dataclass
class _Stack:
    title: str
    frames: list[Frame] = field(default_factory=list)


@dataclass
class Race:
    """One report: its stacks in printed order (the accesses, then the goroutines' creation)."""

    stacks: list[_Stack] = field(default_factory=list)


def read_line(race: Race, line: str, root: str) -> None:
    """One line of a report (between ``WARNING: DATA RACE`` and the ``=====`` line)."""
    if (a := _ACCESS.match(line)) is not None:
        race.stacks.append(_Stack(title=f"{a['what']} by {a['who']}"))
    elif (c := _CREATED.match(line)) is not None:
        race.stacks.append(_Stack(title=f"goroutine {c['n']} ({c['state']}) created"))
    elif race.stacks and (f := _FN.match(line)) is not None:
        race.stacks[-1].frames.append(Frame(file="", function=_short(f["fn"])))
    elif race.stacks and race.stacks[-1].frames and (loc := _LOC.match(line)) is not None:
        last = race.stacks[-1].frames.pop()
        file = relative(loc["file"], root)
        race.stacks[-1].frames.append(
            Frame(file=file, line=to_int(loc["line"]), function=last.function)
        )


def _short(function: str) -> str:
    """``github.com/o/r/v2/expirable.(*LRU[...]).Get`` -> ``expirable.(*LRU[...]).Get``."""
    head, _, tail = function.rpartition("/")
    return tail if head else function


def _own(frames: list[Frame]) -> list[Frame]:
    """The repository's frames: relative paths, not the test binary's generated main."""
    return [f for f in frames if f.file and not f.file.startswith("/") and f.file != "_testmain.go"]


def _first(frames: list[Frame]) -> Frame:
    """The innermost repository frame, else the innermost one (a race inside the runtime)."""
    return next(iter(_own(frames)), frames[0])


def _where(frame: Frame, *, name: bool = True) -> str:
    at = f"{frame.file}:{frame.line}"
    return f"{at} in {frame.function}" if name and frame.function else at


def summary(races: list[Race]) -> tuple[str, tuple[Frame, ...], list[str]]:
    """The first report as (message, the racing access's frames outermost first, detail lines):
    both accesses at their innermost repository frame, the other stacks in the detail."""
    stacks = races[0].stacks
    accesses = [s for s in stacks if not s.title.startswith("goroutine ")]
    said = [f"{s.title} at {_where(_first(s.frames), name=False)}" for s in accesses if s.frames]
    first = accesses[0].frames if accesses else []
    frames = tuple(reversed(_own(first) or first))
    detail: list[str] = []
    for stack in stacks[1:]:
        own = _own(stack.frames)[:4]
        if own:  # a goroutine the testing package started says nothing to fix
            detail.append(f"{stack.title} at {_where(own[0])}")
            detail.extend(f"  from {_where(f)}" for f in own[1:])
    if len(races) > 1:
        detail.append(f"(+{len(races) - 1} more data race reports in this test)")
    return "; ".join(said), frames, detail

"""``go test -timeout``: the panic that ends a test binary which ran too long, and the tests it
names. Go 1.20+ lists them (``running tests:``, a tab, ``TestX (30s)``); before it, ``-v``'s
``=== RUN`` lines without a result say which were still running, and a quiet run only the
goroutine dump, whose test functions (``pkg.TestX.func8``) name the top-level test."""

from __future__ import annotations

import re
from itertools import islice

from greenloop.parsers.model import Failure, Frame, Kind

PANIC = "panic: test timed out after "
_LISTED = re.compile(r"^\t(?P<name>\S+) \((?P<took>[\d.]+[a-zµ]*)\)$")
_TEST_FUNCTION = re.compile(r"\.(?P<name>(?:Test|Benchmark|Fuzz|Example)\w*)(?:\.func\d+)*$")


def listed(line: str) -> str:
    """A test of Go 1.20's ``running tests:`` list, or ""."""
    m = _LISTED.match(line) if line.startswith("\t") else None
    return m["name"] if m else ""


def leaves(names: list[str]) -> list[str]:
    """The tests that ran no subtest of their own: a parent waits for its running subtests."""
    parents = {name[:i] for name in names for i in _slashes(name)}
    return [name for name in dict.fromkeys(names) if name not in parents]


def _slashes(name: str) -> list[int]:
    return [m.start() for m in islice(re.finditer("/", name), 16)]


def from_functions(functions: list[str]) -> list[str]:
    """The top-level tests whose functions the goroutine dump shows, in its order."""
    found = [m["name"] for fn in functions if (m := _TEST_FUNCTION.search(fn))]
    return list(dict.fromkeys(found))


def test_goroutine(frames: list[Frame], goroutines: list[tuple[int, str]]) -> list[Frame]:
    """The frames of the goroutine running a test's own code (``[running]`` before one that waits
    in ``t.Run``), not the timer's alarm nor ``main``: where the test hung."""
    spans = [
        (header, frames[start : goroutines[i + 1][0] if i + 1 < len(goroutines) else len(frames)])
        for i, (start, header) in enumerate(goroutines)
    ]
    tests = [(h, fs) for h, fs in spans if any(_TEST_FUNCTION.search(f.function) for f in fs)]
    busy = [fs for h, fs in tests if "[running" in h or "[runnable" in h]
    chosen = busy or [fs for _, fs in tests[-1:]]
    return chosen[0] if chosen else frames


def killed_in(name: str) -> Failure:
    """A test ``-v`` saw start and never end before the run was killed: where it hung."""
    return Failure(
        kind=Kind.TEST, id=name, message="still running when the run was killed: no result"
    )

"""The normalized failure model every parser produces."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

MAKE_ERROR = "make error"
"""The error type of make's own ``*** [target] Error N`` line: its recipe failed, nothing more."""


class Kind(StrEnum):
    TEST = "test"
    LINT = "lint"
    TYPE = "type"
    BUILD = "build"
    FORMAT = "format"
    CRASH = "crash"
    WARNING = "warning"
    """A warning the run printed (pytest's warnings summary): never a failing test."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Frame:
    """One traceback entry."""

    file: str
    line: int | None = None
    function: str = ""
    source: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Failure:
    """One thing that failed: a test, a diagnostic, a build error or a crash."""

    kind: Kind
    id: str
    """Test node id, or ``file:line:col code`` for diagnostics."""
    file: str = ""
    line: int | None = None
    column: int | None = None
    code: str = ""
    """Rule or error code (E501, arg-type, E0308, TS2322)."""
    error_type: str = ""
    """Exception class or diagnostic category (AssertionError, error)."""
    message: str = ""
    frames: tuple[Frame, ...] = ()
    detail: tuple[str, ...] = ()
    """Supporting lines: the assertion diff, expected/actual, code context."""
    severity: str = "error"
    """``error`` or ``warning``: warnings never make a stage fail on their own."""
    phase: str = ""
    """A test's fixture that failed outside the test's own call: ``setup`` or ``teardown``
    (pytest's ``ERROR at teardown of test_x``, after a test that may well have passed)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Counts:
    """Totals as the tool reported them."""

    collected: int | None = None
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    xfailed: int = 0
    xpassed: int = 0
    warnings: int = 0
    subtests_passed: int = 0
    """pytest 9's subtests, as its closing line counts them (subtest failures are in ``failed``)."""
    subtests_failed: int = 0
    summary_seen: bool = False
    """Whether the run's closing summary was seen: without it the run is incomplete."""

    @property
    def failing(self) -> int:
        return self.failed + self.errors

    @property
    def ran(self) -> int:
        return self.passed + self.failed + self.errors + self.xfailed + self.xpassed


@dataclass(frozen=True, slots=True, kw_only=True)
class ParserInput:
    """What a parser is fed: captured output only. Parsers never run processes."""

    argv: tuple[str, ...] = ()
    exit_code: int = 0
    stdout: str = ""
    stderr: str = ""
    merged: str = ""
    artifacts: tuple[tuple[str, str], ...] = ()
    """Structured side files the run produced, as (name, text): plugin JSON, JUnit XML."""
    root: str = ""
    """The repository root, to make paths relative."""
    root_aliases: tuple[str, ...] = ()
    """Other spellings of ``root`` a tool may print: through a symlink, as macOS's ``/tmp`` and
    ``/var/folders`` are of ``/private/…``, or the shell's logical ``$PWD``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ParseResult:
    """What one parser read in one command's output: failures, counts, notes."""

    tool: str
    failures: tuple[Failure, ...] = ()
    counts: Counts = field(default_factory=Counts)
    killed: tuple[str, ...] = ()
    """Suites or workers terminated by a signal inside the run (incomplete coverage)."""
    notes: tuple[str, ...] = ()
    python: str = ""
    """The Python version the tests ran under (greenloop's pytest plugin says), when known."""
    site_copies: tuple[tuple[str, str], ...] = ()
    """The repository's own modules the run imported from an installed copy: (name, file)."""
    outcomes: tuple[tuple[str, str], ...] = ()
    """Every test the run reported, as (id, outcome): ``passed``, ``failed``, ``error``,
    ``skipped``, ``xfailed``, ``xpassed``; empty when the runner reports no per-test results
    (greenloop's pytest plugin and JUnit XML do). What declared acceptance reads (issue 28)."""

    @property
    def errors(self) -> tuple[Failure, ...]:
        return tuple(f for f in self.failures if f.severity == "error")

    @property
    def warnings(self) -> tuple[Failure, ...]:
        return tuple(f for f in self.failures if f.severity != "error")


# where a package manager installs what the project depends on (never the project's own files)
DEPENDENCY_DIRS = frozenset({"node_modules", "site-packages", "dist-packages"})
INTERNAL_ERROR = "INTERNALERROR"
"""The ``code`` of the crash a pytest INTERNALERROR is read as (parsers/pytest.py): classify
reads whose file raised it."""


def in_dependencies(path: str) -> bool:
    return any(part in DEPENDENCY_DIRS for part in path.split("/"))

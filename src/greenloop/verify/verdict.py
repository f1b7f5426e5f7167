"""A stage's verdict (green, failed, env_failure, timeout, killed or untrusted) and the
Classification that carries it with its reasons: what classify and its environment checks return."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from enum import StrEnum

from greenloop.parsers.model import ParseResult


class Verdict(StrEnum):
    GREEN = "green"
    FAILED = "failed"
    ENV_FAILURE = "env_failure"
    TIMEOUT = "timeout"
    KILLED = "killed"
    UNTRUSTED = "untrusted"

    @property
    def exit_code(self) -> int:
        """The ``greenloop check`` exit-code contract."""
        return EXIT_CODES[self]

    @property
    def passed(self) -> bool:
        return self is Verdict.GREEN


EXIT_CODES = {
    Verdict.GREEN: 0,
    Verdict.FAILED: 1,
    Verdict.ENV_FAILURE: 3,
    Verdict.TIMEOUT: 4,
    Verdict.KILLED: 4,
    Verdict.UNTRUSTED: 5,
}
# Worst first: the cascade's verdict is the worst of its stages'.
SEVERITY = (
    Verdict.ENV_FAILURE,
    Verdict.TIMEOUT,
    Verdict.KILLED,
    Verdict.FAILED,
    Verdict.UNTRUSTED,
    Verdict.GREEN,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Classification:
    """A stage's verdict and why: the reasons a human reads, the line that decided it."""

    verdict: Verdict
    reasons: tuple[str, ...] = ()
    """Why, in plain words (shown to the human; env reasons never go to the agent)."""
    soft: bool = False
    """Green with warnings ("soft success")."""
    evidence: str = ""
    """The output line that decided an environment failure."""
    missing_module: str = ""
    missing_command: str = ""
    """The command the shell could not find (``sh: 1: pnpm: not found`` -> pnpm)."""
    advice: str = ""
    """What the human should do, when it is more than "fix the environment"."""


def worst(verdicts: Collection[Verdict]) -> Verdict:
    return min(verdicts, key=SEVERITY.index, default=Verdict.GREEN)


# Parser families whose summary counts tests (linters count findings: 0 is their clean result).
TEST_RUNNERS = frozenset(
    {"pytest", "unittest", "cargo", "go", "junit", "ruby", "generic", "mocha", "uvu", "ava", "tap"}
)


def runs_tests(parsed: ParseResult) -> bool:
    return any(tool in TEST_RUNNERS for tool in parsed.tool.split("+"))

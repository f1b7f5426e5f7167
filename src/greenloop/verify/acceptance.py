"""Declared acceptance (issue 28 item 4): tests that must go from red to green (``--must-pass``,
a batch task's ``fail_to_pass``) and tests that must stay green (``pass_to_pass``), as SWE-bench's
FAIL_TO_PASS / PASS_TO_PASS declare them. A run that passes without running them verified nothing.

Ids are the runner's own: pytest node ids (``tests/test_x.py::TestA::test_y[1-2]``), read from
greenloop's pytest plugin; ``classname.name`` from JUnit XML (node --test, Surefire, Gradle,
nextest). Django's ``test_y (tests.test_x.TestA)`` is taken for a pytest suite when that module's
file exists. A declared id without its parameters (``test_y``) stands for every ``test_y[...]``.
Pure, but for ``supported`` and ``normalize``, which look at the command and the tree.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from greenloop.errors import FatalError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from greenloop.config import Config
    from greenloop.detect.stages import Cascade

NOT_RUN = "not run"
_DJANGO = re.compile(r"^(\w+) \(([\w.]+)\)$")
_JUNIT_WORDS = frozenset({"mvn", "mvnw", "gradle", "gradlew", "cargo-nextest", "nextest"})


class WrongDeclaration(FatalError):
    """The declaration does not fit the suite at baseline (a fail-to-pass test already passes, an
    id the runner never reported): nothing the agent could do would verify it (exit 2; a batch
    task is ``invalid``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Acceptance:
    """Each declared test and what the gate saw of it (``passed``, ``failed`` … or ``not run``)."""

    fail_to_pass: tuple[tuple[str, str], ...] = ()
    pass_to_pass: tuple[tuple[str, str], ...] = ()

    @property
    def declared(self) -> bool:
        return bool(self.fail_to_pass or self.pass_to_pass)

    @property
    def not_run(self) -> tuple[str, ...]:
        """Declared tests that did not run to a verdict: absent, deselected, skipped, xfailed."""
        return tuple(i for i, o in self.fail_to_pass + self.pass_to_pass if o not in _RAN)

    @property
    def failed(self) -> tuple[str, ...]:
        return tuple(i for i, o in self.fail_to_pass + self.pass_to_pass if o in _FAILED)

    @property
    def accepted(self) -> bool:
        return all(o == "passed" for _, o in self.fail_to_pass + self.pass_to_pass)

    def broken(self) -> tuple[str, ...]:
        """Pass-to-pass tests that failed: a regression."""
        return tuple(i for i, o in self.pass_to_pass if o in _FAILED)

    def untrusted(self) -> tuple[str, ...]:
        """Why a green run does not meet the declaration, one reason per test."""
        reasons = [
            f"declared test {i} did not run{_how(o)}" for i, o in self._all() if o not in _RAN
        ]
        reasons += [f"declared test {i} {o}" for i, o in self._all() if o in _RAN and o != "passed"]
        return tuple(reasons)

    def line(self) -> str:
        """``declared acceptance: 2/2 fail-to-pass passed, 14/14 pass-to-pass passed``."""
        parts = [
            f"{_passed(rows)}/{len(rows)} {name} passed"
            for name, rows in (
                ("fail-to-pass", self.fail_to_pass),
                ("pass-to-pass", self.pass_to_pass),
            )
            if rows
        ]
        missing = self.not_run
        failed = self.failed
        tail = f"; did not run: {_names(missing)}" if missing else ""
        tail += f"; failed: {_names(failed)}" if failed else ""
        return "declared acceptance: " + ", ".join(parts) + tail

    def to_json(self) -> dict[str, object]:
        return {
            "fail_to_pass": [{"id": i, "outcome": o} for i, o in self.fail_to_pass],
            "pass_to_pass": [{"id": i, "outcome": o} for i, o in self.pass_to_pass],
            "accepted": self.accepted,
            "line": self.line(),
        }

    def _all(self) -> tuple[tuple[str, str], ...]:
        return self.fail_to_pass + self.pass_to_pass


_RAN = frozenset({"passed", "failed", "error", "xpassed"})
_FAILED = frozenset({"failed", "error"})


def _how(outcome: str) -> str:
    return (
        f" ({outcome})"
        if outcome != NOT_RUN
        else " (not collected: deleted, renamed or deselected)"
    )


def _passed(rows: Sequence[tuple[str, str]]) -> int:
    return sum(o == "passed" for _, o in rows)


def _names(ids: Sequence[str]) -> str:
    return ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")


def judge(
    fail_to_pass: Sequence[str], pass_to_pass: Sequence[str], outcomes: Iterable[tuple[str, str]]
) -> Acceptance:
    """What the run's per-test ``outcomes`` say of each declared test."""
    seen = dict(outcomes)
    return Acceptance(
        fail_to_pass=tuple((i, outcome_of(i, seen)) for i in fail_to_pass),
        pass_to_pass=tuple((i, outcome_of(i, seen)) for i in pass_to_pass),
    )


def outcome_of(test_id: str, seen: dict[str, str]) -> str:
    """The test's outcome; for an id without parameters, the worst of its parametrized cases."""
    if test_id in seen:
        return seen[test_id]
    parts = test_id.split("::")
    for cut in range(len(parts) - 1, 0, -1):  # its file or class did not collect: an error
        if seen.get("::".join(parts[:cut])) == "error":
            return "error"
    cases = [o for i, o in seen.items() if i.startswith(test_id + "[")]
    if not cases:
        return NOT_RUN
    order = ("error", "failed", "xfailed", "skipped", "xpassed", "passed")
    return next(o for o in order if o in cases)


def normalize(ids: Sequence[str], root: Path) -> tuple[str, ...]:
    """The ids in pytest's form: Django's ``test_y (pkg.mod.Class)`` becomes
    ``pkg/mod.py::Class::test_y`` when that file exists; anything else stays as given."""
    return tuple(_pytest_form(i.strip(), root) for i in ids)


def _pytest_form(test_id: str, root: Path) -> str:
    m = _DJANGO.match(test_id)
    if not m:
        return test_id
    name, dotted = m.groups()
    parts = dotted.split(".")
    for cut in (len(parts) - 1, len(parts)):  # module.Class, or a function in module
        path = "/".join(parts[:cut]) + ".py"
        if cut and (root / path).is_file():
            return "::".join([path, *parts[cut:], name])
    return test_id


def form_problems(ids: Sequence[str], *, pytest: bool) -> list[str]:
    """Ids that are not in the runner's form (checked for pytest, whose form is known)."""
    if not pytest:
        return []
    return [
        f"declared test {i!r} is not a pytest node id (path/to/test_file.py::test_name"
        + (
            ", or Django's 'test_name (module.Class)' for a module that exists"
            if _DJANGO.match(i)
            else ""
        )
        + ")"
        for i in ids
        if "::" not in i or not i.split("::", 1)[0].endswith(".py")
    ]


def supported(argv: tuple[str, ...], root: Path) -> str | None:
    """Which per-test report the stage's runner gives (``pytest``, ``junit``); None: none."""
    from greenloop.verify import instrument

    if instrument._wants_pytest(argv, root):
        return "pytest"
    words = {os.path.basename(w) for arg in argv for w in arg.split()}
    if instrument._is_node_test(argv) or words & _JUNIT_WORDS:
        return "junit"
    return None


def prepare_declared(root: Path, config: Config, cascade: Cascade) -> Config:
    """The declared ids checked and in the runner's form before anything runs (FatalError: exit 2)."""
    if not (config.must_pass or config.pass_to_pass):
        return config
    kinds = {supported(s.argv, root) for s in cascade.stages} - {None}
    if not kinds:
        shown = cascade.display
        raise FatalError(
            "declared tests (--must-pass, must_pass, pass_to_pass) need a runner that reports each "
            "test's result: greenloop reads them from pytest (its plugin) and from JUnit XML "
            f"(node --test, Maven Surefire, Gradle, cargo nextest); the verifier `{shown}` "
            "reports none"
        )
    must, keep = normalize(config.must_pass, root), normalize(config.pass_to_pass, root)
    problems = form_problems(must + keep, pytest=kinds == {"pytest"})
    problems += [
        f"declared test {i!r} is listed both as fail-to-pass and as pass-to-pass"
        for i in dict.fromkeys(must)
        if i in keep
    ]
    if problems:
        raise FatalError("invalid declared tests:\n" + "\n".join(f"  {p}" for p in problems))
    return replace(config, must_pass=must, pass_to_pass=keep)


def plan_line(config: Config) -> str:
    """The pre-flight's line: what must pass for a success."""
    if not (config.must_pass or config.pass_to_pass):
        return ""
    parts = [f"{len(config.must_pass)} fail-to-pass"] if config.must_pass else []
    parts += [f"{len(config.pass_to_pass)} pass-to-pass"] if config.pass_to_pass else []
    return f"  declared acceptance: {' and '.join(parts)} test(s) must run and pass\n"

"""A test stage + its failing tests -> the same stage narrowed to those tests (issue 7). Pure.

Each runner is narrowed through its own selection mechanism, with its own fail-fast flag when it has
one; anything greenloop can't narrow with certainty (an unknown runner, a shell pipeline, options whose
arity we don't know, a failure that is not a test) gives ``None``: the caller runs the full stage.
Never guess: a wrong narrowing would hide failures, a missing one only costs time.

- pytest: ``GREENLOOP_PYTEST_SELECT`` (node ids and test files, one a line) read by our plugin, which
  deselects every other item: works for ``pytest``, ``python -m pytest`` and wrappers (``make test``,
  ``tox``) alike, whatever paths the command names. Fail-fast: ``GREENLOOP_PYTEST_FAILFAST`` (``-x``).
- unittest: ``python -m unittest -f <ids>`` (ids replace the names or plain discovery).
- cargo: ``cargo test ... -- --exact <names>`` (libtest takes several filters after ``--``; cargo's
  own TESTNAME takes one). libtest has no stable fail-fast.
- go: ``go test -failfast -run '^(TestA|TestB)$' <packages>``; subtests select their top-level test.
- node:test: ``node --test --test-name-pattern='^(?:a|b)$' <files>``; Node 20 has no fail-fast.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from greenloop.detect import Stage
from greenloop.parsers.model import Failure, Kind

SELECT_ENV = "GREENLOOP_PYTEST_SELECT"
FAILFAST_ENV = "GREENLOOP_PYTEST_FAILFAST"
MAX_SELECT_BYTES = 64 * 1024  # one environment string stays far below Linux's 128 KiB
MAX_IDS = 200
_SHELL_OPS = re.compile(r"[|&;<>()$`\\*?\[\]{}~\n]")
_PYTEST_RUNNERS = frozenset({"make", "tox", "nox", "uv", "hatch", "poetry", "pdm", "rye", "just"})
_TEST_FILE = re.compile(r"(?:^|/)(?:test_[^/]*\.py|[^/]*_test\.py|tests?/[^/]*\.py|conftest\.py)$")


@dataclass(frozen=True, slots=True, kw_only=True)
class Subset:
    """A stage narrowed to some tests."""

    stage: Stage
    env: tuple[tuple[str, str], ...] = ()
    """Extra environment for the run (the pytest plugin's selection)."""
    ids: tuple[str, ...]
    """The test ids selected."""
    files: tuple[str, ...] = ()
    """Whole test files selected (ones the last edit touched)."""


def narrow(
    stage: Stage,
    failures: Sequence[Failure],
    *,
    tool: str,
    touched: Sequence[str] = (),
    fail_fast: bool = True,
) -> Subset | None:
    """``stage`` run on ``failures`` only (plus ``touched`` test files where the runner can)."""
    if stage.fix or not failures or len(failures) > MAX_IDS:
        return None
    if any(f.kind is not Kind.TEST or not f.id for f in failures):
        return None  # a build error or a crash is not a test selection
    ids = tuple(dict.fromkeys(f.id for f in failures))
    narrower = _NARROWERS.get(tool)
    return narrower(stage, failures, ids, tuple(touched), fail_fast) if narrower else None


def touched_test_files(files: Sequence[str]) -> tuple[str, ...]:
    """The Python test files among the paths an edit changed."""
    return tuple(f for f in files if _TEST_FILE.search(f) and not f.endswith("conftest.py"))


def _words(stage: Stage) -> list[str] | None:
    """The stage as argv, or None when it is a shell string with more than one simple command."""
    if isinstance(stage.command, tuple):
        return list(stage.command)
    if _SHELL_OPS.search(stage.command):
        return None
    try:
        return shlex.split(stage.command)
    except ValueError:
        return None


def _with_argv(stage: Stage, argv: list[str]) -> Stage:
    command: tuple[str, ...] | str = (
        shlex.join(argv) if isinstance(stage.command, str) else tuple(argv)
    )
    return Stage(name=stage.name, command=command, why=stage.why, timeout=stage.timeout)


# ---- pytest: through the plugin, whatever the command looks like ----


def _pytest(
    stage: Stage,
    failures: Sequence[Failure],
    ids: tuple[str, ...],
    touched: tuple[str, ...],
    ff: bool,
) -> Subset | None:
    text = stage.command if isinstance(stage.command, str) else " ".join(stage.command)
    names = [os.path.basename(w) for w in text.split()]
    if not ("pytest" in names or "py.test" in names or (names and names[0] in _PYTEST_RUNNERS)):
        return None  # our plugin (and so the selection) would not reach this pytest
    files = touched_test_files(touched)
    select = "\n".join((*ids, *files))
    if len(select.encode()) > MAX_SELECT_BYTES:
        return None
    env = ((SELECT_ENV, select), (FAILFAST_ENV, "1")) if ff else ((SELECT_ENV, select),)
    return Subset(stage=stage, env=env, ids=ids, files=files)


# ---- unittest ----

_UNITTEST_FLAGS = frozenset(
    {
        "-v",
        "-q",
        "-b",
        "-c",
        "-f",
        "--verbose",
        "--quiet",
        "--buffer",
        "--catch",
        "--failfast",
        "--locals",
    }
)


def _unittest(
    stage: Stage,
    failures: Sequence[Failure],
    ids: tuple[str, ...],
    touched: tuple[str, ...],
    ff: bool,
) -> Subset | None:
    argv = _words(stage)
    if argv is None or len(argv) < 3 or argv[1:3] != ["-m", "unittest"]:
        return None
    if not os.path.basename(argv[0]).startswith("python"):
        return None
    rest, flags = argv[3:], []
    if rest[:1] == ["discover"] and len(rest) > 1 and any(not a.startswith("-") for a in rest[1:]):
        return None  # discover -s DIR / -p PATTERN: ids may not import the same way
    for arg in rest:
        if arg == "discover" or not arg.startswith("-"):
            continue  # names are replaced by the ids
        if arg not in _UNITTEST_FLAGS:
            return None
        flags.append(arg)
    ff_flag = ["-f"] if ff and not {"-f", "--failfast"} & set(flags) else []
    return Subset(stage=_with_argv(stage, [*argv[:3], *flags, *ff_flag, *ids]), ids=ids)


# ---- cargo test ----

_CARGO_VALUE = frozenset(
    {"-p", "--package", "--features", "-F", "--manifest-path", "--target", "--profile", "-j",
     "--jobs", "--target-dir", "--color", "--config", "--exclude", "--lib", "--test", "--bin"}
)  # fmt: skip
_CARGO_BOOL = frozenset(
    {"-q", "--quiet", "-v", "--verbose", "--workspace", "--all", "--all-features", "--release",
     "--no-default-features", "--locked", "--offline", "--frozen", "--all-targets", "--lib",
     "--tests", "--bins", "--no-fail-fast"}
)  # fmt: skip
_LIBTEST_VALUE = frozenset({"--test-threads", "--color", "--format", "--skip", "-Z"})
_LIBTEST_BOOL = frozenset({"--nocapture", "--show-output", "-q", "--quiet", "--include-ignored"})


def _cargo(
    stage: Stage,
    failures: Sequence[Failure],
    ids: tuple[str, ...],
    touched: tuple[str, ...],
    ff: bool,
) -> Subset | None:
    argv = _words(stage)
    if argv is None or argv[:2] != ["cargo", "test"]:
        return None
    split = argv.index("--") if "--" in argv else len(argv)
    cargo_args, test_args = argv[2:split], argv[split + 1 :]
    if not _only_options(cargo_args, _CARGO_VALUE - {"--lib"}, _CARGO_BOOL):
        return None  # a TESTNAME filter or an option we don't know
    if not _only_options(test_args, _LIBTEST_VALUE, _LIBTEST_BOOL) or "--exact" in test_args:
        return None
    narrowed = [*argv[:split], "--", *test_args, "--exact", *ids]
    return Subset(stage=_with_argv(stage, narrowed), ids=ids)


def _only_options(args: Sequence[str], value: frozenset[str], boolean: frozenset[str]) -> bool:
    i = 0
    while i < len(args):
        arg = args[i]
        name = arg.split("=", 1)[0]
        if name in boolean and "=" not in arg:
            i += 1
        elif name in value:
            i += 1 if "=" in arg else 2
        else:
            return False
    return True


# ---- go test ----

_GO_VALUE = frozenset(
    {"-run", "-skip", "-count", "-timeout", "-tags", "-p", "-parallel", "-cpu", "-coverprofile",
     "-covermode", "-coverpkg", "-mod", "-modfile", "-shuffle", "-ldflags", "-gcflags", "-C",
     "-exec", "-o", "-outputdir", "-vet"}
)  # fmt: skip
_GO_BOOL = frozenset({"-v", "-race", "-short", "-failfast", "-json", "-cover", "-x", "-trimpath"})


def _go(
    stage: Stage,
    failures: Sequence[Failure],
    ids: tuple[str, ...],
    touched: tuple[str, ...],
    ff: bool,
) -> Subset | None:
    argv = _words(stage)
    if argv is None or argv[:2] != ["go", "test"]:
        return None
    kept = _go_flags(argv[2:])
    tests = [_go_test(i) for i in ids]
    if kept is None or any(t is None for t in tests):
        return None
    packages = list(dict.fromkeys(t[0] for t in tests if t))
    names = "|".join(dict.fromkeys(t[1] for t in tests if t))
    ff_flag = ["-failfast"] if ff and "-failfast" not in kept else []
    narrowed = ["go", "test", *kept, *ff_flag, f"-run=^({names})$", *packages]
    return Subset(stage=_with_argv(stage, narrowed), ids=ids)


def _go_flags(args: Sequence[str]) -> list[str] | None:
    """The flags to keep (``-run``/``-skip`` dropped, packages dropped), None if one is unknown."""
    kept: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        name = "-" + arg.lstrip("-").split("=", 1)[0] if arg.startswith("-") else ""
        if not name:
            i += 1  # a package pattern: replaced by the failing packages
            continue
        if name in _GO_BOOL and "=" not in arg:
            kept.append(arg)
            i += 1
            continue
        if name not in _GO_VALUE:
            return None  # -args, -bench, unknown: we can't tell what follows
        pair = [arg] if "=" in arg else list(args[i : i + 2])
        if name not in ("-run", "-skip"):
            kept += pair
        i += len(pair)
    return kept


_GO_ID = re.compile(r"^(?P<pkg>\S+?)\.(?P<test>(?:Test|Example|Fuzz)\w*)(?:/.*)?$")


def _go_test(failure_id: str) -> tuple[str, str] | None:
    """``example.com/m/pkg.TestX/sub`` -> (``example.com/m/pkg``, ``TestX``): subtests run whole."""
    m = _GO_ID.match(failure_id)
    return (m["pkg"], m["test"]) if m else None


# ---- node --test ----

_NODE_VALUE = frozenset(
    {"--test-reporter", "--test-reporter-destination", "--test-concurrency", "--test-timeout",
     "--import", "--require", "-r", "--loader", "--experimental-loader", "--test-shard"}
)  # fmt: skip


def _node(
    stage: Stage,
    failures: Sequence[Failure],
    ids: tuple[str, ...],
    touched: tuple[str, ...],
    ff: bool,
) -> Subset | None:
    argv = _words(stage)
    if argv is None or not argv or os.path.basename(argv[0]) != "node" or "--test" not in argv:
        return None
    if any(not f.file for f in failures):
        return None
    kept: list[str] = []
    i = 1
    while i < len(argv):
        arg = argv[i]
        name = arg.split("=", 1)[0]
        if not arg.startswith("-"):
            i += 1  # a test file or glob: replaced by the failing files
        elif name in ("--test-name-pattern", "--test-skip-pattern"):
            i += 1 if "=" in arg else 2
        elif name in _NODE_VALUE and "=" not in arg:
            kept += argv[i : i + 2]
            i += 2
        else:
            kept.append(arg)
            i += 1
    pattern = "^(?:" + "|".join(re.escape(n) for n in ids) + ")$"
    files = list(dict.fromkeys(f.file for f in failures))
    narrowed = [argv[0], *kept, f"--test-name-pattern={pattern}", *files]
    return Subset(stage=_with_argv(stage, narrowed), ids=ids)


_Narrower = Callable[
    [Stage, Sequence[Failure], tuple[str, ...], tuple[str, ...], bool], Subset | None
]
_NARROWERS: dict[str, _Narrower] = {
    "pytest": _pytest,
    "unittest": _unittest,
    "cargo": _cargo,
    "go": _go,
    "js": _node,
    "node-test": _node,
}

"""A test stage + its failing tests -> the same stage narrowed to those tests (issue 7). Pure.

Each runner is narrowed through its own selection mechanism, with its own fail-fast flag when it has
one; anything greenloop can't narrow with certainty (an unknown runner, a shell pipeline, options whose
arity we don't know, a failure that is not a test) gives ``None``: the caller runs the full stage.
Never guess: a wrong narrowing would hide failures, a missing one only costs time.

- pytest: ``GREENLOOP_PYTEST_SELECT`` (node ids and test files, one a line) read by our plugin, which
  collects only those files (issue 29: not the whole suite) and deselects every other item: works for ``pytest``, ``python -m pytest`` and wrappers (``make test``,
  ``tox``) alike, whatever paths the command names. Fail-fast: ``GREENLOOP_PYTEST_FAILFAST`` (``-x``).
- unittest: ``python -m unittest -f <ids>`` (ids replace the names or plain discovery).
- cargo: ``cargo test ... -- --exact <names>`` (libtest takes several filters after ``--``; cargo's
  own TESTNAME takes one). libtest has no stable fail-fast.
- go: ``go test -failfast -run '^(TestA|TestB)$' <packages>``; subtests select their top-level test.
- node:test: ``node --test --test-name-pattern='^(?:a|b)$' <files>``; Node 20 has no fail-fast.
- jest: ``jest --testNamePattern='^(?:a b)$' [--bail] --passWithNoTests -- <path regexes>``;
  vitest: ``vitest run --testNamePattern=… [--bail=1] --passWithNoTests <file filters>``. Only when
  the runner is run directly (``jest``, ``npx jest``, ``vitest run`` …), never through ``npm test``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence

from greenloop.detect.stages import Stage
from greenloop.parsers.model import Failure, Kind
from greenloop.verify.subset_argv import Subset, scan_options, with_argv, without_options, words
from greenloop.verify.subset_js import (
    JEST_BOOL,
    JEST_VALUE,
    JS_SOURCE,
    JS_TEST_FILE,
    VITEST_BOOL,
    VITEST_VALUE,
    narrow_js,
    narrow_node,
)

SELECT_ENV = "GREENLOOP_PYTEST_SELECT"
FAILFAST_ENV = "GREENLOOP_PYTEST_FAILFAST"
FIRST_ENV = "GREENLOOP_PYTEST_FIRST"
RERUN_ENV = "GREENLOOP_PYTEST_RERUN"
STOP_ABOVE_ENV = "GREENLOOP_PYTEST_STOP_ABOVE"
MAX_SELECT_BYTES = 64 * 1024  # one environment string stays far below Linux's 128 KiB
MAX_IDS = 200
_PYTEST_RUNNERS = frozenset({"make", "tox", "nox", "uv", "hatch", "poetry", "pdm", "rye", "just"})
_TEST_FILE = re.compile(r"(?:^|/)(?:test_[^/]*\.py|[^/]*_test\.py|tests?/[^/]*\.py|conftest\.py)$")


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
    """The test files (Python, JavaScript/TypeScript) among the paths an edit changed."""
    return tuple(
        f
        for f in files
        if (_TEST_FILE.search(f) and not f.endswith("conftest.py")) or JS_TEST_FILE.search(f)
    )


def python_files(files: Sequence[str]) -> tuple[str, ...]:
    return tuple(f for f in files if f.endswith(".py"))


# ---- pytest: through the plugin, whatever the command looks like ----


def _pytest(
    stage: Stage,
    failures: Sequence[Failure],
    ids: tuple[str, ...],
    touched: tuple[str, ...],
    ff: bool,
) -> Subset | None:
    if not _reaches_plugin(stage):
        return None  # our plugin (and so the selection) would not reach this pytest
    files = python_files(touched_test_files(touched))
    select = "\n".join((*ids, *files))
    if len(select.encode()) > MAX_SELECT_BYTES:
        return None
    env = ((SELECT_ENV, select), (FAILFAST_ENV, "1")) if ff else ((SELECT_ENV, select),)
    return Subset(stage=stage, env=env, ids=ids, files=files)


def _reaches_plugin(stage: Stage) -> bool:
    text = stage.command if isinstance(stage.command, str) else " ".join(stage.command)
    names = [os.path.basename(w) for w in text.split()]
    return "pytest" in names or "py.test" in names or bool(names and names[0] in _PYTEST_RUNNERS)


def select(stage: Stage, tests: Sequence[str]) -> Subset | None:
    """A pytest stage run on ``tests`` (node ids, whole test files) only: the affected step's
    selection (issue 29). Too many ids for one environment string: their files (a superset)."""
    if stage.fix or not tests or not _reaches_plugin(stage):
        return None
    chosen = "\n".join(tests)
    if len(chosen.encode()) > MAX_SELECT_BYTES:
        chosen = "\n".join(dict.fromkeys(t.split("::", 1)[0] for t in tests))
    if len(chosen.encode()) > MAX_SELECT_BYTES:
        return None
    return Subset(stage=stage, env=((SELECT_ENV, chosen),), ids=tuple(tests))


def first(stage: Stage, groups: Sequence[Sequence[str]]) -> tuple[tuple[str, str], ...] | None:
    """The environment that has our plugin run ``groups`` (node ids, whole test files) first, in
    their order, then the rest of the suite; a group with a failure ends the run after it. None:
    the plugin would not reach this pytest, or the groups do not fit one environment string."""
    if stage.fix or not any(groups) or not _reaches_plugin(stage):
        return None
    blocks = []
    for tests in (g for g in groups if g):
        block = "\n".join(tests)
        if len(block.encode()) > MAX_SELECT_BYTES // 2:  # their files: a superset, in order
            block = "\n".join(dict.fromkeys(t.split("::", 1)[0] for t in tests))
        blocks.append(block)
    value = "\n\n".join(blocks)
    return None if len(value.encode()) > MAX_SELECT_BYTES else ((FIRST_ENV, value),)


def related(stage: Stage, changed: Sequence[str]) -> Subset | None:
    """jest ``--findRelatedTests`` / ``vitest related --run`` on the changed source and test files:
    the runner's own dependency graph picks the tests (issue 29). Only for a direct command."""
    argv = words(stage)
    files = [f for f in changed if JS_SOURCE.search(f) and not f.startswith("-")]
    if stage.fix or not argv or not files:
        return None
    prefix = 2 if os.path.basename(argv[0]) == "npx" else 1
    name = os.path.basename(argv[prefix - 1]) if len(argv) >= prefix else ""
    if name == "jest":
        scanned = scan_options(argv[prefix:], JEST_VALUE, JEST_BOOL)
        if scanned is None:
            return None
        kept = without_options(scanned[0], {"-t", "--testNamePattern"}, JEST_VALUE)
        extra = [] if "--passWithNoTests" in kept else ["--passWithNoTests"]
        narrowed = [*argv[:prefix], *kept, *extra, "--findRelatedTests", *files]
    elif name == "vitest" and argv[prefix : prefix + 1] == ["run"]:
        scanned = scan_options(argv[prefix + 1 :], VITEST_VALUE, VITEST_BOOL)
        if scanned is None:
            return None
        kept = without_options(scanned[0], {"-t", "--testNamePattern", "--run"}, VITEST_VALUE)
        extra = [] if "--passWithNoTests" in kept else ["--passWithNoTests"]
        narrowed = [*argv[:prefix], "related", "--run", *kept, *extra, *files]
    else:
        return None
    return Subset(stage=with_argv(stage, narrowed), ids=tuple(files), files=tuple(files))


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
    argv = words(stage)
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
    return Subset(stage=with_argv(stage, [*argv[:3], *flags, *ff_flag, *ids]), ids=ids)


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
    argv = words(stage)
    if argv is None or argv[:2] != ["cargo", "test"]:
        return None
    split = argv.index("--") if "--" in argv else len(argv)
    cargo_args, test_args = argv[2:split], argv[split + 1 :]
    if not _only_options(cargo_args, _CARGO_VALUE - {"--lib"}, _CARGO_BOOL):
        return None  # a TESTNAME filter or an option we don't know
    if not _only_options(test_args, _LIBTEST_VALUE, _LIBTEST_BOOL) or "--exact" in test_args:
        return None
    narrowed = [*argv[:split], "--", *test_args, "--exact", *ids]
    return Subset(stage=with_argv(stage, narrowed), ids=ids)


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
    argv = words(stage)
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
    return Subset(stage=with_argv(stage, narrowed), ids=ids)


def _go_flags(args: Sequence[str]) -> list[str] | None:
    """The flags to keep (``-run``/``-skip`` dropped, packages dropped), None if one is unknown."""
    split = go_split(args)
    return split[0] if split else None


def go_split(args: Sequence[str]) -> tuple[list[str], list[str]] | None:
    """``go test``'s arguments as (the flags to keep, ``-run``/``-skip`` dropped; the package
    patterns), None on a flag we cannot carry over."""
    kept: list[str] = []
    patterns: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        name = "-" + arg.lstrip("-").split("=", 1)[0] if arg.startswith("-") else ""
        if not name:
            patterns.append(arg)  # replaced by the packages chosen
            i += 1
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
    return kept, patterns


_GO_ID = re.compile(r"^(?P<pkg>\S+?)\.(?P<test>(?:Test|Example|Fuzz)\w*)(?:/.*)?$")


def _go_test(failure_id: str) -> tuple[str, str] | None:
    """``example.com/m/pkg.TestX/sub`` -> (``example.com/m/pkg``, ``TestX``): subtests run whole."""
    m = _GO_ID.match(failure_id)
    return (m["pkg"], m["test"]) if m else None


_Narrower = Callable[
    [Stage, Sequence[Failure], tuple[str, ...], tuple[str, ...], bool], Subset | None
]
_NARROWERS: dict[str, _Narrower] = {
    "pytest": _pytest,
    "unittest": _unittest,
    "cargo": _cargo,
    "go": _go,
    "js": narrow_js,
    "node-test": narrow_node,
}

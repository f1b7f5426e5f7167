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
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from greenloop.detect.stages import Stage
from greenloop.parsers.model import Failure, Kind

SELECT_ENV = "GREENLOOP_PYTEST_SELECT"
FAILFAST_ENV = "GREENLOOP_PYTEST_FAILFAST"
MAX_SELECT_BYTES = 64 * 1024  # one environment string stays far below Linux's 128 KiB
MAX_IDS = 200
_SHELL_OPS = re.compile(r"[|&;<>()$`\\*?\[\]{}~\n]")
_PYTEST_RUNNERS = frozenset({"make", "tox", "nox", "uv", "hatch", "poetry", "pdm", "rye", "just"})
_TEST_FILE = re.compile(r"(?:^|/)(?:test_[^/]*\.py|[^/]*_test\.py|tests?/[^/]*\.py|conftest\.py)$")
_JS_TEST_FILE = re.compile(r"(?:\.(?:test|spec)\.[cm]?[jt]sx?|(?:^|/)__tests__/.*\.[cm]?[jt]sx?)$")


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
    """The test files (Python, JavaScript/TypeScript) among the paths an edit changed."""
    return tuple(
        f
        for f in files
        if (_TEST_FILE.search(f) and not f.endswith("conftest.py")) or _JS_TEST_FILE.search(f)
    )


def python_files(files: Sequence[str]) -> tuple[str, ...]:
    return tuple(f for f in files if f.endswith(".py"))


def js_files(files: Sequence[str]) -> tuple[str, ...]:
    return tuple(f for f in files if _JS_TEST_FILE.search(f))


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
    return replace(stage, command=command, fix=False)


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


def related(stage: Stage, changed: Sequence[str]) -> Subset | None:
    """jest ``--findRelatedTests`` / ``vitest related --run`` on the changed source and test files:
    the runner's own dependency graph picks the tests (issue 29). Only for a direct command."""
    argv = _words(stage)
    files = [f for f in changed if _JS_SOURCE.search(f) and not f.startswith("-")]
    if stage.fix or not argv or not files:
        return None
    prefix = 2 if os.path.basename(argv[0]) == "npx" else 1
    name = os.path.basename(argv[prefix - 1]) if len(argv) >= prefix else ""
    if name == "jest":
        scanned = _scan(argv[prefix:], _JEST_VALUE, _JEST_BOOL)
        if scanned is None:
            return None
        kept = _without(scanned[0], {"-t", "--testNamePattern"}, _JEST_VALUE)
        extra = [] if "--passWithNoTests" in kept else ["--passWithNoTests"]
        narrowed = [*argv[:prefix], *kept, *extra, "--findRelatedTests", *files]
    elif name == "vitest" and argv[prefix : prefix + 1] == ["run"]:
        scanned = _scan(argv[prefix + 1 :], _VITEST_VALUE, _VITEST_BOOL)
        if scanned is None:
            return None
        kept = _without(scanned[0], {"-t", "--testNamePattern", "--run"}, _VITEST_VALUE)
        extra = [] if "--passWithNoTests" in kept else ["--passWithNoTests"]
        narrowed = [*argv[:prefix], "related", "--run", *kept, *extra, *files]
    else:
        return None
    return Subset(stage=_with_argv(stage, narrowed), ids=tuple(files), files=tuple(files))


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


# ---- jest and vitest ----

_JEST_VALUE = frozenset(
    {"-c", "--config", "-w", "--maxWorkers", "--testTimeout", "--rootDir", "--testEnvironment",
     "--seed", "--maxConcurrency", "--outputFile", "--coverageDirectory", "--cacheDirectory",
     "--workerIdleMemoryLimit", "-t", "--testNamePattern"}
)  # fmt: skip
_JEST_BOOL = frozenset(
    {"--ci", "--no-ci", "--silent", "--verbose", "-i", "--runInBand", "--coverage",
     "--collectCoverage", "--colors", "--detectOpenHandles", "--forceExit", "--passWithNoTests",
     "--cache", "--no-cache", "--noStackTrace", "--expand", "-e", "--errorOnDeprecated",
     "--logHeapUsage", "--useStderr", "--json", "--clearMocks", "--resetMocks",
     "--restoreMocks", "--randomize", "--watchman", "--no-watchman", "--bail", "-b",
     "--detectLeaks", "--injectGlobals"}
)  # fmt: skip
_VITEST_VALUE = frozenset(
    {"-c", "--config", "-r", "--root", "--dir", "--reporter", "--pool", "--maxWorkers",
     "--testTimeout", "--hookTimeout", "--teardownTimeout", "--environment", "--mode",
     "--project", "--outputFile", "--retry", "--maxConcurrency", "--bail", "-t",
     "--testNamePattern"}
)  # fmt: skip
_VITEST_BOOL = frozenset(
    {"--globals", "--passWithNoTests", "--allowOnly", "--silent", "--color", "--no-color",
     "--coverage", "-u", "--update", "--isolate", "--no-isolate", "--fileParallelism",
     "--no-file-parallelism", "--logHeapUsage", "--hideSkippedTests", "--run"}
)  # fmt: skip
_JS_SOURCE = re.compile(r"\.[cm]?[jt]sx?$")
_JS_SPECIAL = re.compile(r"[\\^$.*+?()[\]{}|/]")


def _js(
    stage: Stage,
    failures: Sequence[Failure],
    ids: tuple[str, ...],
    touched: tuple[str, ...],
    ff: bool,
) -> Subset | None:
    """``js`` output comes from jest, vitest or node:test: the command says which one ran."""
    argv = _words(stage)
    if not argv:
        return None
    prefix = 2 if os.path.basename(argv[0]) == "npx" else 1  # npx jest / jest
    name = os.path.basename(argv[prefix - 1]) if len(argv) >= prefix else ""
    if name == "jest":
        return _jest(stage, argv[:prefix], argv[prefix:], failures, js_files(touched), ff)
    if name == "vitest" and argv[prefix : prefix + 1] == ["run"]:
        rest = argv[prefix + 1 :]
        return _vitest(stage, argv[: prefix + 1], rest, ids, js_files(touched), ff)
    return _node(stage, failures, ids, touched, ff)


def _jest(
    stage: Stage,
    head: list[str],
    args: list[str],
    failures: Sequence[Failure],
    touched: tuple[str, ...],
    ff: bool,
) -> Subset | None:
    scanned = _scan(args, _JEST_VALUE, _JEST_BOOL)
    if scanned is None or any(_JS_SOURCE.search(f.id) for f in failures):
        return None  # "Test suite failed to run" is named after its file: its tests are unknown
    kept, positional = scanned
    files = [_jest_test_file(f) for f in failures]
    if "" in files and touched:
        return None  # the touched files' tests need a run without a name filter, on all files
    names = [_js_name(f.id, " \u203a ") for f in failures]
    kept = _without(kept, {"-t", "--testNamePattern"}, _JEST_VALUE)
    # jest compiles the pattern with the "i" flag: "Bad one" runs too (a superset, never less)
    extra = [] if touched else ["--testNamePattern=^(?:" + "|".join(names) + ")$"]
    ids = tuple(dict.fromkeys(f.id for f in failures))
    if ff and len(ids) == 1 and not {"--bail", "-b"} & {_name(a) for a in kept}:
        extra.append("--bail")  # jest's bail counts failing suites: one target, one suite
    if "--passWithNoTests" not in kept:
        extra.append("--passWithNoTests")  # a renamed test file: the gate's full run decides
    if "" not in files:  # path regexes (jest matches them against absolute paths)
        positional = ["(?:^|/)" + _js_escape(f) + "$" for f in dict.fromkeys([*files, *touched])]
    narrowed = [*head, *kept, *extra, *(["--", *positional] if positional else [])]
    return Subset(stage=_with_argv(stage, narrowed), ids=ids, files=touched)


def _jest_test_file(failure: Failure) -> str:
    """The test file a jest failure is in: its own file, or the one test file in its stack."""
    if _JS_TEST_FILE.search(failure.file):
        return failure.file
    found = {fr.file for fr in failure.frames if _JS_TEST_FILE.search(fr.file)}
    return found.pop() if len(found) == 1 else ""


def _vitest(
    stage: Stage,
    head: list[str],
    args: list[str],
    ids: tuple[str, ...],
    touched: tuple[str, ...],
    ff: bool,
) -> Subset | None:
    scanned = _scan(args, _VITEST_VALUE, _VITEST_BOOL)
    parts = [i.split(" > ", 1) for i in ids]  # "a.test.ts > describe > test"
    if scanned is None or any(
        len(p) != 2 or not _JS_SOURCE.search(p[0]) or p[0].startswith("|") for p in parts
    ):
        return None  # a file-level failure, or a project-prefixed name ("|unit| a.test.ts")
    files = list(dict.fromkeys([*(p[0] for p in parts), *touched]))
    if any(f.startswith("-") or ":" in f for f in files):
        return None  # an option to vitest, or a file:line filter
    kept = _without(scanned[0], {"-t", "--testNamePattern"}, _VITEST_VALUE)
    names = [_js_name(p[1], " > ") for p in parts]
    extra = [] if touched else ["--testNamePattern=^(?:" + "|".join(names) + ")$"]
    if ff and len(ids) == 1 and "--bail" not in {_name(a) for a in kept}:
        extra.append("--bail=1")
    if "--passWithNoTests" not in kept:
        extra.append("--passWithNoTests")
    # vitest's filters match as substrings: a.test.ts also picks b/a.test.ts (a superset)
    narrowed = [*head, *kept, *extra, *files]
    return Subset(stage=_with_argv(stage, narrowed), ids=ids, files=touched)


def _scan(
    args: Sequence[str], value: frozenset[str], boolean: frozenset[str]
) -> tuple[list[str], list[str]] | None:
    """``args`` split into known options and positionals; None on an option we don't know."""
    kept: list[str] = []
    positional: list[str] = []
    i = 0
    while i < len(args):
        arg, name = args[i], _name(args[i])
        if arg == "--":
            positional += args[i + 1 :]
            break
        if not arg.startswith("-"):
            positional.append(arg)
            i += 1
        elif name in boolean:
            kept.append(arg)
            i += 1
        elif name in value and ("=" in arg or i + 1 < len(args)):
            step = 1 if "=" in arg else 2
            kept += args[i : i + step]
            i += step
        else:
            return None
    return kept, positional


def _without(args: list[str], names: set[str], value: frozenset[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(args):
        step = 2 if _name(args[i]) in value and "=" not in args[i] else 1
        if _name(args[i]) not in names:
            out += args[i : i + step]
        i += step
    return out


def _name(arg: str) -> str:
    return arg.split("=", 1)[0]


def _js_name(failure_id: str, separator: str) -> str:
    """A runner's printed name as a regex for its full name (the titles joined with spaces)."""
    titles = [_js_escape(t) for t in failure_id.split(separator)]
    return f"(?: |{_js_escape(separator)})".join(titles)  # a title may hold the separator itself


def _js_escape(text: str) -> str:
    """JavaScript RegExp escaping (valid with and without the ``u`` flag)."""
    return _JS_SPECIAL.sub(lambda m: "\\" + m.group(0), text)


_Narrower = Callable[
    [Stage, Sequence[Failure], tuple[str, ...], tuple[str, ...], bool], Subset | None
]
_NARROWERS: dict[str, _Narrower] = {
    "pytest": _pytest,
    "unittest": _unittest,
    "cargo": _cargo,
    "go": _go,
    "js": _js,
    "node-test": _node,
}

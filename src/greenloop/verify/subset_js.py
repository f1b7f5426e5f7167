"""A JavaScript test stage narrowed to its failing tests (subset.py): node:test, jest, vitest."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from greenloop.detect.stages import Stage
from greenloop.parsers.model import Failure
from greenloop.verify.subset_argv import (
    Subset,
    option_name,
    scan_options,
    with_argv,
    without_options,
    words,
)

JS_TEST_FILE = re.compile(r"(?:\.(?:test|spec)\.[cm]?[jt]sx?|(?:^|/)__tests__/.*\.[cm]?[jt]sx?)$")


def js_files(files: Sequence[str]) -> tuple[str, ...]:
    return tuple(f for f in files if JS_TEST_FILE.search(f))


# ---- node --test ----

_NODE_VALUE = frozenset(
    {"--test-reporter", "--test-reporter-destination", "--test-concurrency", "--test-timeout",
     "--import", "--require", "-r", "--loader", "--experimental-loader", "--test-shard"}
)  # fmt: skip


def narrow_node(
    stage: Stage,
    failures: Sequence[Failure],
    ids: tuple[str, ...],
    touched: tuple[str, ...],
    ff: bool,
) -> Subset | None:
    argv = words(stage)
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
    return Subset(stage=with_argv(stage, narrowed), ids=ids)


# ---- jest and vitest ----

JEST_VALUE = frozenset(
    {"-c", "--config", "-w", "--maxWorkers", "--testTimeout", "--rootDir", "--testEnvironment",
     "--seed", "--maxConcurrency", "--outputFile", "--coverageDirectory", "--cacheDirectory",
     "--workerIdleMemoryLimit", "-t", "--testNamePattern"}
)  # fmt: skip
JEST_BOOL = frozenset(
    {"--ci", "--no-ci", "--silent", "--verbose", "-i", "--runInBand", "--coverage",
     "--collectCoverage", "--colors", "--detectOpenHandles", "--forceExit", "--passWithNoTests",
     "--cache", "--no-cache", "--noStackTrace", "--expand", "-e", "--errorOnDeprecated",
     "--logHeapUsage", "--useStderr", "--json", "--clearMocks", "--resetMocks",
     "--restoreMocks", "--randomize", "--watchman", "--no-watchman", "--bail", "-b",
     "--detectLeaks", "--injectGlobals"}
)  # fmt: skip
VITEST_VALUE = frozenset(
    {"-c", "--config", "-r", "--root", "--dir", "--reporter", "--pool", "--maxWorkers",
     "--testTimeout", "--hookTimeout", "--teardownTimeout", "--environment", "--mode",
     "--project", "--outputFile", "--retry", "--maxConcurrency", "--bail", "-t",
     "--testNamePattern"}
)  # fmt: skip
VITEST_BOOL = frozenset(
    {"--globals", "--passWithNoTests", "--allowOnly", "--silent", "--color", "--no-color",
     "--coverage", "-u", "--update", "--isolate", "--no-isolate", "--fileParallelism",
     "--no-file-parallelism", "--logHeapUsage", "--hideSkippedTests", "--run"}
)  # fmt: skip
JS_SOURCE = re.compile(r"\.[cm]?[jt]sx?$")
_JS_SPECIAL = re.compile(r"[\\^$.*+?()[\]{}|/]")


def narrow_js(
    stage: Stage,
    failures: Sequence[Failure],
    ids: tuple[str, ...],
    touched: tuple[str, ...],
    ff: bool,
) -> Subset | None:
    """``js`` output comes from jest, vitest or node:test: the command says which one ran."""
    argv = words(stage)
    if not argv:
        return None
    prefix = 2 if os.path.basename(argv[0]) == "npx" else 1  # npx jest / jest
    name = os.path.basename(argv[prefix - 1]) if len(argv) >= prefix else ""
    if name == "jest":
        return _jest(stage, argv[:prefix], argv[prefix:], failures, js_files(touched), ff)
    if name == "vitest" and argv[prefix : prefix + 1] == ["run"]:
        rest = argv[prefix + 1 :]
        return _vitest(stage, argv[: prefix + 1], rest, ids, js_files(touched), ff)
    return narrow_node(stage, failures, ids, touched, ff)


def _jest(
    stage: Stage,
    head: list[str],
    args: list[str],
    failures: Sequence[Failure],
    touched: tuple[str, ...],
    ff: bool,
) -> Subset | None:
    scanned = scan_options(args, JEST_VALUE, JEST_BOOL)
    if scanned is None or any(JS_SOURCE.search(f.id) for f in failures):
        return None  # "Test suite failed to run" is named after its file: its tests are unknown
    kept, positional = scanned
    files = [_jest_test_file(f) for f in failures]
    if "" in files and touched:
        return None  # the touched files' tests need a run without a name filter, on all files
    names = [_js_name(f.id, " \u203a ") for f in failures]
    kept = without_options(kept, {"-t", "--testNamePattern"}, JEST_VALUE)
    # jest compiles the pattern with the "i" flag: "Bad one" runs too (a superset, never less)
    extra = [] if touched else ["--testNamePattern=^(?:" + "|".join(names) + ")$"]
    ids = tuple(dict.fromkeys(f.id for f in failures))
    if ff and len(ids) == 1 and not {"--bail", "-b"} & {option_name(a) for a in kept}:
        extra.append("--bail")  # jest's bail counts failing suites: one target, one suite
    if "--passWithNoTests" not in kept:
        extra.append("--passWithNoTests")  # a renamed test file: the gate's full run decides
    if "" not in files:  # path regexes (jest matches them against absolute paths)
        positional = ["(?:^|/)" + _js_escape(f) + "$" for f in dict.fromkeys([*files, *touched])]
    narrowed = [*head, *kept, *extra, *(["--", *positional] if positional else [])]
    return Subset(stage=with_argv(stage, narrowed), ids=ids, files=touched)


def _jest_test_file(failure: Failure) -> str:
    """The test file a jest failure is in: its own file, or the one test file in its stack."""
    if JS_TEST_FILE.search(failure.file):
        return failure.file
    found = {fr.file for fr in failure.frames if JS_TEST_FILE.search(fr.file)}
    return found.pop() if len(found) == 1 else ""


def _vitest(
    stage: Stage,
    head: list[str],
    args: list[str],
    ids: tuple[str, ...],
    touched: tuple[str, ...],
    ff: bool,
) -> Subset | None:
    scanned = scan_options(args, VITEST_VALUE, VITEST_BOOL)
    parts = [i.split(" > ", 1) for i in ids]  # "a.test.ts > describe > test"
    if scanned is None or any(
        len(p) != 2 or not JS_SOURCE.search(p[0]) or p[0].startswith("|") for p in parts
    ):
        return None  # a file-level failure, or a project-prefixed name ("|unit| a.test.ts")
    files = list(dict.fromkeys([*(p[0] for p in parts), *touched]))
    if any(f.startswith("-") or ":" in f for f in files):
        return None  # an option to vitest, or a file:line filter
    kept = without_options(scanned[0], {"-t", "--testNamePattern"}, VITEST_VALUE)
    names = [_js_name(p[1], " > ") for p in parts]
    extra = [] if touched else ["--testNamePattern=^(?:" + "|".join(names) + ")$"]
    if ff and len(ids) == 1 and "--bail" not in {option_name(a) for a in kept}:
        extra.append("--bail=1")
    if "--passWithNoTests" not in kept:
        extra.append("--passWithNoTests")
    # vitest's filters match as substrings: a.test.ts also picks b/a.test.ts (a superset)
    narrowed = [*head, *kept, *extra, *files]
    return Subset(stage=with_argv(stage, narrowed), ids=ids, files=touched)


def _js_name(failure_id: str, separator: str) -> str:
    """A runner's printed name as a regex for its full name (the titles joined with spaces)."""
    titles = [_js_escape(t) for t in failure_id.split(separator)]
    return f"(?: |{_js_escape(separator)})".join(titles)  # a title may hold the separator itself


def _js_escape(text: str) -> str:
    """JavaScript RegExp escaping (valid with and without the ``u`` flag)."""
    return _JS_SPECIAL.sub(lambda m: "\\" + m.group(0), text)

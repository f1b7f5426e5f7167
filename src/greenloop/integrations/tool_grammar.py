"""Each JS and node test runner's option grammar: which options take a value, which select tests.

A partial run is one that selects tests (a name filter, a file), never one that only configures the
run: ``mocha -r ts-node/register``, ``node --import tsx --test``, ``jest --env node``,
``vitest -c vite.config.ts`` each run the whole suite. A directory argument that is the test
directory itself (``mocha test/``, ``tape 'test/*.js'``) is the whole suite too; one file is not.
"""

from __future__ import annotations

import re

_COMMON_VALUED = frozenset({"-c", "--config", "--reporter", "--outputFile", "--testTimeout"})
VALUED: dict[str, frozenset[str]] = {
    "jest": _COMMON_VALUED
    | {"--env", "--testEnvironment", "--reporters", "--maxWorkers", "-w", "--rootDir", "--roots"}
    | {"--setupFiles", "--setupFilesAfterEnv", "--coverageReporters", "--coverageDirectory"}
    | {"--testTimeout", "--workerIdleMemoryLimit", "--seed", "--cacheDirectory"},
    "vitest": _COMMON_VALUED
    | {"-r", "--root", "--dir", "--environment", "--pool", "--exclude", "--mode", "--maxWorkers"}
    | {"--bail", "--retry", "--sequence.seed"},
    "mocha": _COMMON_VALUED
    | {"-r", "--require", "--import", "-R", "--reporter-option", "-O", "--reporter-options"}
    | {"-u", "--ui", "-t", "--timeout", "-s", "--slow", "--retries", "-j", "--jobs", "--package"}
    | {"--extension", "--ignore", "--exclude", "--file", "--node-option", "-n"},
    "node": frozenset(
        {"-r", "--require", "--import", "--loader", "--experimental-loader", "-C", "--conditions"}
        | {"--test-reporter", "--test-reporter-destination", "--test-concurrency"}
        | {"--test-timeout", "--env-file", "--input-type", "--test-coverage-include"}
        | {"--test-coverage-exclude", "--watch-path", "--stack-size"}
    ),
    "uvu": frozenset({"-r", "--require", "-i", "--ignore", "-C", "--cwd"}),
    "tape": frozenset({"-r", "--require", "-i", "--ignore"}),
    "ava": frozenset({"--config", "-c", "--concurrency", "--timeout", "-T", "--node-arguments"}),
    "bnt": frozenset({"-r", "--require", "--import"}),
}
FILTERS: dict[str, frozenset[str]] = {
    "jest": frozenset({"-t", "--testNamePattern", "--testPathPattern", "--testPathPatterns"})
    | {"--onlyChanged", "-o", "--changed", "--changedSince", "--selectProjects", "--shard"}
    | {"--findRelatedTests", "--lastCommit", "--onlyFailures", "-f"},
    "vitest": frozenset({"-t", "--testNamePattern", "--changed", "--related", "--shard"})
    | {"--project"},
    "mocha": frozenset({"-g", "--grep", "-f", "--fgrep", "-i", "--invert", "--forbid-only"}),
    "node": frozenset(
        {"--test-name-pattern", "--test-only", "--test-skip-pattern", "--test-shard"}
    ),
    "uvu": frozenset(),
    "tape": frozenset(),
    "ava": frozenset({"-m", "--match", "--update-snapshots"}),
    "bnt": frozenset({"--test-name-pattern"}),
}
BOOLEAN = frozenset(
    {"--onlyChanged", "-o", "--changed", "--lastCommit", "--onlyFailures", "-f", "--test-only"}
    | {"-i", "--invert", "--forbid-only", "--update-snapshots"}
)
_TEST_DIRS = frozenset({"test", "tests", "spec", "specs", "__tests__", "t", "__test__"})
_GLOB = re.compile(r"[*?{]")


def runner_of(head: str) -> str:
    """The grammar a runner's name reads by; an unknown runner gets every known option."""
    return head if head in VALUED else ""


def valued(runner: str) -> frozenset[str]:
    if runner:
        return VALUED[runner]
    return frozenset().union(*VALUED.values()) - frozenset().union(*FILTERS.values())


def filters(runner: str) -> frozenset[str]:
    if runner:
        return FILTERS[runner]
    return FILTERS["jest"] | FILTERS["vitest"]


def selection(args: list[str], runner: str) -> list[str]:
    """The reasons this argument list selects tests: its filters, then the files it names."""
    names, takes = filters(runner), valued(runner) | filters(runner)
    reasons: list[str] = []
    paths: list[str] = []
    skip = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg == "--":
            break
        name, has_value, value = arg.partition("=")
        if name in names:
            if not has_value and name not in BOOLEAN and i + 1 < len(args):
                value, skip = args[i + 1], True
            reasons.append(f"{name} {value}".strip())
        elif arg.startswith("-"):
            skip = name in takes and not has_value
        elif not whole_test_dir(arg):
            paths.append(arg)
    if paths:
        shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
        reasons.append(f"only {shown}")
    return reasons


def whole_test_dir(arg: str) -> bool:
    """``test``, ``./tests/``, ``'test/**/*.test.js'``: the test directory, not a part of it."""
    parts = [p for p in arg.removeprefix("./").split("/") if p]
    if not parts or parts[0] not in _TEST_DIRS:
        return False
    return len(parts) == 1 or all(_GLOB.search(p) for p in parts[1:])

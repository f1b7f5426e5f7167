"""Parsers: captured tool output -> Failures + Counts. A plain dict registry, one module per family.

Parsers never run processes and never raise: anything unexpected degrades to fewer facts.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable
from dataclasses import replace

from greenloop.parsers import path_spellings, sniff
from greenloop.parsers.model import (
    MAKE_ERROR,
    Counts,
    Failure,
    Frame,
    Kind,
    ParseResult,
    ParserInput,
)

__all__ = [
    "PARSERS",
    "Counts",
    "Failure",
    "Frame",
    "Kind",
    "ParseResult",
    "ParserInput",
    "parse_output",
    "parser_for",
    "tools_named",
]

ParserFn = Callable[[ParserInput], ParseResult]

# family -> "module:function" in this package, imported on first use: the Stop hook runs
# `greenloop check` on every agent turn, and most runs need one or two families.
PARSERS: dict[str, str] = {
    "pytest": "pytest:parse",
    "unittest": "unittest:parse",
    "mypy": "python_lint:parse_mypy",
    "ruff": "python_lint:parse_ruff",
    "flake8": "python_lint:parse_flake8",
    "pyright": "python_lint:parse_pyright",
    "black": "python_lint:parse_black",
    "cargo": "rust:parse",
    "js": "js:parse",
    "mocha": "mocha:parse",
    "uvu": "uvu:parse",
    "jasmine": "jasmine:parse",
    "ava": "ava:parse",
    "tap": "tap:parse",
    "tap-spec": "tap_spec:parse",
    "go": "go:parse",
    "ruby": "ruby:parse",
    "native": "native:parse",
    "junit": "junit:parse",
    "generic": "generic:parse",
}

# Words in a command that name a tool family -> the parser for it.
COMMAND_WORDS: dict[str, str] = {
    "pytest": "pytest",
    "py.test": "pytest",
    "unittest": "unittest",
    "mypy": "mypy",
    "dmypy": "mypy",
    "ruff": "ruff",
    "flake8": "flake8",
    "pyright": "pyright",
    "basedpyright": "pyright",
    "black": "black",
    **dict.fromkeys(("cargo", "rustc", "clippy-driver", "cargo-nextest"), "cargo"),
    **dict.fromkeys(
        ("tsc", "eslint", "prettier", "jest", "vitest", "node", "tsx", "vue-tsc"), "js"
    ),
    **dict.fromkeys(("mocha", "_mocha"), "mocha"),
    "uvu": "uvu",
    "jasmine": "jasmine",
    "ava": "ava",
    "tap": "tap",
    "tap-spec": "tap-spec",
    "go": "go",
    **dict.fromkeys(("rspec", "rake", "ruby", "rails", "minitest"), "ruby"),
    **dict.fromkeys(
        ("make", "gmake", "gcc", "g++", "clang", "clang++", "cc", "cmake", "ctest"), "native"
    ),
    **dict.fromkeys(("phpunit", "mvn", "mvnw", "gradle", "gradlew", "javac"), "native"),
}

PYTEST_ARTIFACT = "pytest-plugin/"
_WORD = re.compile(r"[\w.+-]+")


def tools_named(argv: tuple[str, ...]) -> list[str]:
    """The parser families a command names, in order (``ruff check . && pytest`` -> both)."""
    found: list[str] = []
    for arg in argv:
        if arg.startswith("-"):
            continue  # an option's value names no command (`node --test --test-reporter=tap`)
        for word in _WORD.findall(arg):
            tool = COMMAND_WORDS.get(os.path.basename(word))
            if tool and tool in PARSERS and tool not in found:
                found.append(tool)
    return found


def parse_output(inp: ParserInput) -> ParseResult:
    """Parse with every family the command names (or its output shows); generic when none applies."""
    inp = path_spellings.one_root(inp)  # symlinked (macOS /tmp) or Windows spellings of it
    named = tools_named(inp.argv)
    if "pytest" not in named and any(name.startswith(PYTEST_ARTIFACT) for name, _ in inp.artifacts):
        named.append("pytest")  # `make test` ran pytest: our plugin's records say so
    tools = named + [t for t in sniff.sniff_tools(inp, named) if t in PARSERS and t not in named]
    tools = (tools or ["generic"]) + (["junit"] if sniff.has_junit(inp) else [])
    every = [_safe(parser_for(t), inp, t) for t in tools]
    results = sniff.drop_redundant_junit(every)
    outcomes = tuple(o for r in every for o in r.outcomes)  # a dropped JUnit report's too
    if len(results) == 1:
        return replace(results[0], outcomes=outcomes)
    return replace(merge_results(results), outcomes=outcomes)


def parser_for(tool: str) -> ParserFn:
    module, function = PARSERS[tool].split(":")
    fn: ParserFn = getattr(importlib.import_module(f"greenloop.parsers.{module}"), function)
    return fn


def _safe(fn: ParserFn, inp: ParserInput, tool: str) -> ParseResult:
    try:
        return fn(inp)
    except Exception as exc:  # a parser bug must never break a run: report it, keep going
        return ParseResult(tool=tool, notes=(f"{tool} parser failed: {exc!r}",))


def merge_results(results: list[ParseResult]) -> ParseResult:
    counts = [r.counts for r in results if r.counts.summary_seen] or [Counts()]
    return ParseResult(
        tool="+".join(r.tool for r in results),
        failures=_without_wrapper_exit([f for r in results for f in r.failures]),
        counts=_sum_counts(counts),
        killed=tuple(k for r in results for k in r.killed),
        notes=tuple(n for r in results for n in r.notes),
        python=next((r.python for r in results if r.python), ""),
    )


def _without_wrapper_exit(failures: list[Failure]) -> tuple[Failure, ...]:
    """make's ``*** [makefile:38: test] Error 1`` says only that its recipe failed: beside the
    failures the recipe's tool reported (markdown's `make test`: 143 unittest failures) it is not
    the first error, nor one more failure."""
    wrapper = [f for f in failures if f.error_type == MAKE_ERROR]
    if wrapper and any(f.severity == "error" and f not in wrapper for f in failures):
        return tuple(f for f in failures if f not in wrapper)
    return tuple(failures)


def _sum_counts(counts: list[Counts]) -> Counts:
    collected = [c.collected for c in counts if c.collected is not None]
    return Counts(
        collected=sum(collected) if collected else None,
        passed=sum(c.passed for c in counts),
        failed=sum(c.failed for c in counts),
        errors=sum(c.errors for c in counts),
        skipped=sum(c.skipped for c in counts),
        xfailed=sum(c.xfailed for c in counts),
        xpassed=sum(c.xpassed for c in counts),
        warnings=sum(c.warnings for c in counts),
        subtests_passed=sum(c.subtests_passed for c in counts),
        subtests_failed=sum(c.subtests_failed for c in counts),
        summary_seen=all(c.summary_seen for c in counts),
    )

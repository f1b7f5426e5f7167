"""Pick parsers from the output itself when the command names no tool (``npm test``, ``make``)."""

from __future__ import annotations

import os
import re

from greenloop.parsers.model import ParseResult, ParserInput

# Commands that run something else: the output, not the command, says which tool ran.
WRAPPERS = {"npm", "npx", "yarn", "pnpm", "bun", "make", "gmake", "just", "task", "tox", "nox"}
# node's report of an uncaught exception: `/abs/file.js:LINE` (or its own loader's
# `node:internal/modules/…:LINE`), the source line, a caret, the error
NODE_UNCAUGHT = re.compile(
    r"^(?:(?:file://)?/\S+?\.[cm]?[jt]sx?|node:internal/[\w/.-]+):\d+\n[^\n]*\n[ \t]*\^+[ \t]*\n\n?"
    r"\[?(?:[A-Z][\w.$]*)?(?:Error|Exception)\b",
    re.M,
)
# node's module-not-found errors: CJS lists the requiring files, ESM has its code
NOT_FOUND = ("\nRequire stack:\n", "[ERR_MODULE_NOT_FOUND]: ")
# tap-spec's failed assertion: `    ✖ should be equal`, then a rule of dashes
_TAP_SPEC_FAIL = re.compile(r"^    \u2716 .+\n    -{3,}$", re.M)
_PYTEST_SUMMARY = re.compile(r"^=+ .*\b(?:passed|failed|errors?|no tests ran)\b.* in [\d.]+s", re.M)
# pytest -q's summary has no "=" border: "1 failed, 3 passed in 0.12s" (a wrapper script's pytest -q)
_PYTEST_QUIET = re.compile(
    r"^(?:\d+ (?:failed|passed|errors?|skipped|xfailed|xpassed|warnings?|deselected|rerun)(?:, )?)+"
    r" in [\d.]+s(?: \([^)\n]*\))?[ \t]*$",
    re.M,
)
# (family, cheap substring markers): any marker present selects the family
MARKERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("cargo", ("test result: ", "\nerror[E", "process didn't exit successfully")),
    (
        "js",
        (
            "\nTests:  ",
            "Test Suites: ",
            "\n# tests ",
            "\u2139 tests ",
            " Test Files ",
            ": error TS",
            " - error TS",
            " problems (",
            " problem (",  # eslint: "✖ 1 problem (1 error, 0 warnings)"
            "[warn] Code style issues",
            "\u2716  ",  # eslint-formatter-pretty (xo, tsd)
            "Oops! Something went wrong!",  # eslint crashed
            "\nOccurred while linting ",  # a lint rule threw (xo, eslint)
        ),
    ),
    ("mocha", (" passing (", '\n  "stats": {')),
    ("uvu", ("\n  Total:     ",)),
    # jasmine's summary: "419 specs, 9 failures[, 2 pending specs]" then "Finished in 2.1 seconds"
    (
        "jasmine",
        (
            " failures\nFinished in ",
            " failure\nFinished in ",
            " pending specs\nFinished in ",
            " pending spec\nFinished in ",
            " workers\nFinished in ",
            "\nNo specs found\n",
        ),
    ),
    ("ava", ("\n  ✘ [fail]: ", " tests passed\n", " test passed\n")),
    ("tap", ("\n# { total: ",)),
    ("tap-spec", ("\n  total:     ",)),  # `tape … | tap-spec`
    ("go", ("--- FAIL: ", "\nok  \t", "\nFAIL\t", "\npanic: ")),
    ("ruby", (" examples, ", " example, ", " assertions, ")),
    (
        "native",
        (
            "Test project ",
            "tests passed, ",
            "\nThere was 1 ",
            "\nThere were ",
            "Tests run: ",
            "tests completed, ",
            "make: *** ",
            "make[1]: *** ",
            ": error: ",
            ": warning: ",
        ),
    ),
    ("unittest", ("\nRan ",)),
    ("mypy", ("\nFound ",)),
)


def sniff_tools(inp: ParserInput, named: list[str]) -> list[str]:
    """Families recognised in the output, when the command itself names none but wrappers."""
    if named and not (named == ["native"] and _wrapped(inp.argv)):
        return []
    text = "\n" + (inp.merged or inp.stdout + "\n" + inp.stderr)
    found = [family for family, markers in MARKERS if any(m in text for m in markers)]
    tail = text[-20000:]
    if ("\n=" in text and _PYTEST_SUMMARY.search(tail)) or _PYTEST_QUIET.search(tail):
        found.insert(0, "pytest")
    if "unittest" in found and "pytest" in found:
        found.remove("unittest")
    if "tap-spec" not in found and "\u2716 " in text and _TAP_SPEC_FAIL.search(text):
        found.append("tap-spec")  # tape died mid-run: no summary, a failed assertion before
    if not found and "^" in text and NODE_UNCAUGHT.search(text):
        found.append("js")  # a node program died before any runner printed a report
    elif not found and any(m in text for m in NOT_FOUND):
        found.append("js")  # a module not found, printed by a runner (mocha's ESM file loader)
    if "[KILLED]" in text:
        found.append("generic")  # seed 003: the runner's own KILLED lines
    return found


def _wrapped(argv: tuple[str, ...]) -> bool:
    return any(os.path.basename(word) in WRAPPERS for arg in argv for word in arg.split())


def has_junit(inp: ParserInput) -> bool:
    return any(name.lower().endswith(".xml") for name, _ in inp.artifacts)


def drop_redundant_junit(results: list[ParseResult]) -> list[ParseResult]:
    """JUnit XML restates what a text parser already found: keep it only when the text said little."""
    others = [r for r in results if r.tool != "junit"]
    if len(others) == len(results):
        return results
    said = any(r.counts.summary_seen or any(f.kind == "test" for f in r.failures) for r in others)
    return others if said else results

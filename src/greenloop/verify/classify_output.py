"""Environment failures the output shows alone: the command line refused, a tool make could not
run, a toolchain older than the project asks for, installed dependencies at fault, a conftest
written for an older pytest, an environment variable not set."""

from __future__ import annotations

import os
import re
from itertools import pairwise

from greenloop.parsers.model import Kind, ParseResult, in_dependencies
from greenloop.processes.process import ProcessResult
from greenloop.verify.verdict import Classification, Verdict

# pluggy refusing a hook implementation whose arguments pytest no longer passes (py.path's `path`
# and `startdir`, removed in pytest 9): a conftest or plugin written for an older pytest
_GONE_HOOK_ARGS = frozenset({"path", "startdir"})
_HOOK_REFUSED = (
    r"^hookimpl definition: (?P<hook>\w+\([^)]*\))\s*\n"
    r"Argument\(s\) \{(?P<args>[^}]*)\} are declared in the hookimpl but can not be found in the hookspec"
)
# pytest >= 6 refuses a collector built as Node(path, parent) instead of Node.from_parent(...)
_NODE_CONSTRUCTION = (
    r"^Direct construction of [\w.]+ has been deprecated, please use [\w.]+\.from_parent\.$"
)
_MAKE_NOT_FOUND = (
    r"^g?make(?:\[\d+\])?: (?P<cmd>[^\s:]+): (?:No such file or directory|Command not found)\s*$"
)
USAGE_MAX_LINES = 40  # a usage error is the whole output (with a runner's preamble at most)


def dependencies_only(run: ProcessResult, parsed: ParseResult) -> Classification | None:
    """Every error inside installed dependencies, none in the repository's files and no failing
    test (tsd's TypeScript against a newer node_modules/@types/node: 2 791 errors, all theirs):
    versions that do not fit each other, which no edit of the code fixes."""
    errors, counts = parsed.errors, parsed.counts
    if not errors or counts.failed or any(f.kind is Kind.TEST for f in errors):
        return None
    # only a report read whole, to its summary: the repository's errors may come last (node cuts
    # a piped report short when it exits; the byte cap drops the middle)
    if run.dropped_bytes or not counts.summary_seen or counts.errors < len(errors):
        return None
    if not all(in_dependencies(f.file) for f in errors):  # parsers list the project's own first
        return None
    first = errors[0]
    return Classification(
        verdict=Verdict.ENV_FAILURE,
        reasons=(
            f"all {counts.errors} errors it reports are inside installed dependencies, none in "
            "this repository's files: their versions do not fit each other or the toolchain",
        ),
        evidence=f"{first.file}:{first.line}: {first.message}",
    )


def hooks_of_an_older_pytest(text: str) -> Classification | None:
    """A conftest.py or plugin written for an older pytest (docopt's 2014 conftest on pytest 9:
    ``pytest_collect_file(path, parent)``; on pytest 8 its ``DocoptTestFile(path, parent)``): no
    test ran, and the code under test is not at fault. A hook argument pytest never had (a typo
    the agent made) stays the code's failure."""
    found = _gone_hook_argument(text) or re.search(_NODE_CONSTRUCTION, text, re.M)
    if found is None:
        return None
    return Classification(
        verdict=Verdict.ENV_FAILURE,
        reasons=(
            "a conftest.py or plugin was written for an older pytest than the installed one, "
            "which no longer supports it",
        ),
        evidence=found.group(0).strip().replace("\n", "; "),
        advice="Install the pytest version the project was written for (its tox.ini or "
        "requirements), or port that hook to today's pytest; then re-run.",
    )


def _gone_hook_argument(text: str) -> re.Match[str] | None:
    if "PluginValidationError" not in text:
        return None
    refused = re.search(_HOOK_REFUSED, text, re.M)
    if refused is None:
        return None
    declared = {arg.strip(" '\"") for arg in refused["args"].split(",")}
    return refused if declared & _GONE_HOOK_ARGS else None


def make_could_not_run(text: str) -> re.Match[str] | None:
    """make runs a recipe line without a shell when it can, so a missing tool is make's own
    ``make: uv: No such file or directory`` then ``Error 127``, not the shell's "not found"."""
    if "Error 127" not in text:
        return None
    return re.search(_MAKE_NOT_FOUND, text, re.M)


def crash_in_dependencies(parsed: ParseResult) -> Classification | None:
    """The tool itself crashed with no line of the repository on its stack (mitt, no lockfile:
    eslint 7's v8-compile-cache loading today's get-intrinsic's .mjs): no edit of the code fixes it."""
    errors = parsed.errors
    if not errors or parsed.counts.failed or any(f.kind is not Kind.CRASH for f in errors):
        return None
    first = errors[0]
    places = [first.file, *(frame.file for frame in first.frames)]
    if not first.frames or not in_dependencies(first.file) or any(map(repository_file, places)):
        return None
    return Classification(
        verdict=Verdict.ENV_FAILURE,
        reasons=(
            "it crashed inside installed dependencies, no line of this repository on its stack: "
            "their versions do not fit each other or the toolchain",
        ),
        evidence=f"{first.file}:{first.line}: {first.error_type}: {first.message}",
    )


def unset_variable(parsed: ParseResult) -> Classification | None:
    """``KeyError: 'DATABASE_URL'`` raised by a line that reads ``os.environ["DATABASE_URL"]``: the
    variable is not set where the verifier runs. The agent would "fix" it with a made-up default;
    one the agent's own edit reads is its to fix (the loop sends failures in touched files)."""
    for failure in parsed.errors:
        name = failure.message.strip("'\"") if failure.error_type == "KeyError" else ""
        reads = re.compile(r"environ\[\s*(['\"])" + re.escape(name) + r"\1\s*\]")
        frame = next((f for f in failure.frames if name and reads.search(f.source)), None)
        if frame is not None:
            return Classification(
                verdict=Verdict.ENV_FAILURE,
                reasons=(f"the environment variable {name} is not set",),
                evidence=f"{frame.file}:{frame.line}: {frame.source.strip()}",
                advice=f"Set {name} where the verifier runs (export it before greenloop, or in the "
                "stage's command), then re-run.",
            )
    return None


def repository_file(path: str) -> bool:
    return bool(path) and not in_dependencies(path) and not path.startswith(("/", "node:"))


def usage_error(run: ProcessResult) -> str:
    """The error line when the command itself refused its arguments (no code edit fixes that):
    argparse's ``usage: mypy …`` + ``mypy: error: …``, clap's ``error: …`` + ``Usage: ruff …``.
    Only from a program the command names, in an output that is little more than the usage."""
    lines = run.merged.strip().splitlines()
    if len(lines) > USAGE_MAX_LINES or "sage: " not in run.merged:
        return ""
    words = {os.path.basename(w) for arg in run.argv for w in re.findall(r"[\w./+-]+", arg)}
    for line in lines:
        head = re.match(r"^[Uu]sage: ([\w.-]+)", line)
        prog = head.group(1) if head else ""
        if prog not in words:
            continue
        errors = [x for x in lines if x.startswith((f"{prog}: error: ", "error: "))]
        if errors:
            return errors[0].strip()
    return ""


# go 1.19 after a failed build: "note: module requires Go 1.21"; go >= 1.21 refuses up front:
# "go: go.mod requires go >= 1.22 (running go 1.21.5; GOTOOLCHAIN=local)"
_GO_TOO_OLD = re.compile(
    r"^(?:note: module requires Go (?P<want>[\d.]+)"
    r"|go: go\.mod requires go >= (?P<min>[\d.]+) \(running go (?P<have>[\d.]+).*)$",
    re.M,
)
# node < 21 takes `node --test 'test/**/*.js'` literally: "Could not find '/abs/test/**/*.js'"
_NODE_NO_GLOB = re.compile(r"^Could not find '(?P<path>[^'\n]*[*?{][^'\n]*)'$", re.M)


def toolchain_too_old(run: ProcessResult) -> Classification | None:
    """The toolchain is older than the project asks for: no edit of the code fixes it."""
    text = run.merged
    go = _GO_TOO_OLD.search(text) if "equires " in text else None
    if go is not None:
        want = go["want"] or go["min"]
        return Classification(
            verdict=Verdict.ENV_FAILURE,
            reasons=(f"the module requires Go {want}, newer than the installed go",),
            evidence=go.group(0).strip(),
            advice=f"Install Go {want} or newer (go.mod's `go` line), then re-run.",
        )
    glob = _NODE_NO_GLOB.search(text) if "Could not find '" in text else None
    if glob is not None:
        return Classification(
            verdict=Verdict.ENV_FAILURE,
            reasons=(
                "`node --test` found no file at a glob pattern: node < 21 does not expand it",
            ),
            evidence=glob.group(0),
            advice="Use Node.js 21 or newer (or name the test files or directory), then re-run.",
        )
    return None


# A test runner's own lines while tests run (pytest's progress, unittest's `... ok`, mocha's ✔ and
# `1) name`, jest's ● and PASS/FAIL, vitest's ticks, crosses and RUN, TAP's `ok N`, node:test's spec lines,
# uvu's and ava's marks, jasmine's Started): the runner had begun reporting tests.
_RUNNER_PROGRESS = re.compile(
    r"^(?:=+ test session starts =+|collected \d+ items?\b.*"
    r"|(?:\S+\.py )?[.FEsxX]+(?: +\[ *\d+%\])?"
    r"|(?=\S*::)\S++ (?:PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b.*"  # linear: one pass
    r"|\S.* \.\.\. (?:ok|FAIL|ERROR|skipped\b.*|expected failure|unexpected success)"
    r"|[ \t]+(?:✔|✓|√|\d+\)) \S.*|[ \t]+[.!,]+"
    r"|[ \t]*● .*|(?:PASS|FAIL) \S.*"
    r"|[ \t]*(?:✓|\u00d7|\u276f) \S.*|[ \t]*RUN [ \t]+v\d.*"
    r"|(?:not )?ok \d+\b.*|[ \t]*(?:✔|✖) .*\(\d[\d.]*m?s\)"
    r"|.*(?:• |✘ ).*|Started)[ \t]*$",
    re.M,
)
_SUMMARIZING_RUNNERS = frozenset(
    {"pytest", "unittest", "mocha", "js", "tap", "tap-spec", "uvu", "ava", "jasmine"}
)


def _node_runner_dots(argv: tuple[str, ...]) -> bool:
    """``node --test --test-reporter=dot``: node's test runner runs each file in a process of its
    own and exits with their verdict; its dot reporter prints no end-of-run summary."""
    words = " ".join(argv).split()
    pairs = {f"{a}={b}" for a, b in pairwise(words) if a == "--test-reporter"}
    runner = any(w == "--test" or w.startswith("--test=") for w in words)
    is_node = any(w.rsplit("/", 1)[-1] == "node" for w in words)
    return is_node and runner and "--test-reporter=dot" in {*words, *pairs}


def ended_before_summary(run: ProcessResult, parsed: ParseResult) -> Classification | None:
    """Exit 0, the test runner's own lines, and no end-of-run summary: the process ended in the
    middle of the run (the code under test called ``process.exit(0)`` or ``os._exit(0)``; jest and
    mocha then exit 0 with the tests they had not run yet unreported). Every one of these runners
    prints its summary at the end of a whole run, so exit 0 without it is never green."""
    if run.exit_code != 0 or parsed.counts.summary_seen or parsed.killed:
        return None
    if not _SUMMARIZING_RUNNERS.intersection(parsed.tool.split("+")):
        return None
    text = run.merged
    if "pytest" in parsed.tool and "[100%]" in text:  # -qq prints no summary after its progress
        return None
    if _node_runner_dots(run.argv):
        return None  # node's dot reporter prints none; under --test the exit code is the runner's

    seen = _RUNNER_PROGRESS.findall(text)
    if not seen:
        return None
    last = seen[-1].strip()
    return Classification(
        verdict=Verdict.KILLED,
        reasons=(
            "it exited 0 before the test runner's end-of-run summary, in the middle of the run "
            "(the code under test may have ended the process)",
        ),
        evidence=last[:200],
    )

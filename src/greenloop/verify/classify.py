"""One stage's run + parse -> Verdict: green, failed, env_failure, timeout, killed or untrusted."""

from __future__ import annotations

import os
import re
from collections.abc import Collection
from dataclasses import dataclass
from enum import StrEnum

from greenloop.parsers.model import INTERNAL_ERROR, Failure, Kind, ParseResult, in_dependencies
from greenloop.processes.process import ProcessResult

TYPE_CHECKING = False  # not typing's: the Stop hook imports this module on every agent turn
if TYPE_CHECKING:
    from greenloop.verify.node_packages import Unresolved


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


# A command string that makes failure look like success (seed step 6, OP-5).
SUPPRESSIONS = (
    (re.compile(r"\|\|\s*(?:true|:)(?:\s|;|$)"), "`|| true` swallows the exit code"),
    (re.compile(r"\|\|\s*exit\s+0\b"), "`|| exit 0` swallows the exit code"),
    (re.compile(r"\|\|\s*echo\b"), "`|| echo` swallows the exit code"),
    (re.compile(r";\s*(?:true|:|exit\s+0)\s*$"), "a trailing `; true` replaces the exit code"),
    (re.compile(r"\bset\s+\+e\b"), "`set +e` ignores failing commands"),
    (re.compile(r"--passWithNoTests\b"), "`--passWithNoTests` passes when no test runs"),
    (re.compile(r"--exit-zero\b"), "`--exit-zero` reports findings with exit 0"),
    (re.compile(r"(?:^|\s)-o\s+allow_no_tests"), "no-tests is allowed"),
)
# Compiled where first needed (re keeps them): only a failing run is searched for them.
ENV_PATTERNS = (
    (r"^.*(?:command not found|: not found)\s*$", "a command is not installed"),
    (
        r"^.*(?:is configured to use \S+ because|ERR_PNPM_BAD_PM_VERSION|ERR_PNPM_UNSUPPORTED_ENGINE"
        r"|Cannot find matching keyid|EBADENGINE|Corepack must currently be enabled).*$",
        "the package manager refused to run (its pinned version or signature)",
    ),
    (r"^.*No space left on device.*$", "the disk is full"),
    (r"^.*(?:Connection refused|ECONNREFUSED).*$", "a service is not running"),
    (
        r"^.*(?:Address already in use|EADDRINUSE).*$",
        "a port the tests need is in use by another process",
    ),
    (
        r"^.*(?:error while loading shared libraries|cannot open shared object file).*$",
        "a system library is missing",
    ),
    (
        r"^.*(?:Cannot allocate memory|MemoryError|out of memory).*$",
        "out of memory",
    ),
    (
        r"^.*(?:Temporary failure in name resolution|Network is unreachable"
        r"|Could not resolve host: |failed to download from `|dial tcp: lookup ).*$",
        "the network is unreachable (a dependency could not be downloaded)",
    ),
)
# sh: "sh: 1: ruff: not found"; bash: "bash: line 1: ruff: command not found": the last name wins
_NOT_FOUND = r"^(?:[^\n]*: )?(?P<cmd>[\w.+@/-]+): (?:command )?not found[ \t]*$"
_MISMATCH = r"imported module '(?P<module>[\w.]+)' has this __file__ attribute:\s+(?P<path>\S+)"
_MAKE_NOT_FOUND = (
    r"^g?make(?:\[\d+\])?: (?P<cmd>[^\s:]+): (?:No such file or directory|Command not found)\s*$"
)
_NO_MODULE = r"No module named '?([\w.]+)'?"
# pytest's header when --lf or --sw deselected what passed before (greenloop's plugin turns them
# off; a run without it, e.g. under tox, which does not pass PYTEST_PLUGINS, prints these)
_PARTIAL_RUN = re.compile(
    r"^(?:run-last-failure: rerun previous \d+ failure|stepwise: skipping \d+ already passed)", re.M
)
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
# pytest: 3 internal error, 4 usage error (bad option, missing path), 5 no tests collected.
PYTEST_INTERNAL, PYTEST_USAGE, PYTEST_NO_TESTS = 3, 4, 5
USAGE_MAX_LINES = 40  # a usage error is the whole output (with a runner's preamble at most)


def classify(
    run: ProcessResult,
    parsed: ParseResult,
    *,
    command: str,
    repo_modules: Collection[str] = (),
    root: str = "",
) -> Classification:
    """Decide one stage's verdict. The exit code decides pass or fail; the output explains."""
    if run.timed_out:
        return _timed_out(run, parsed)
    if run.signal is not None:
        return Classification(verdict=Verdict.KILLED, reasons=(f"killed by signal {run.signal}",))
    if parsed.killed:
        names = ", ".join(parsed.killed[:3])
        return Classification(
            verdict=Verdict.KILLED, reasons=(f"terminated inside the run: {names}",)
        )
    env = stale_install(parsed, root) or environment_problem(run, parsed, repo_modules, root)
    if env is not None:
        return env
    if run.exit_code == 0:
        return _judge_green(run, parsed, command)
    if _is_pytest(parsed) and run.exit_code == PYTEST_NO_TESTS:
        return Classification(
            verdict=Verdict.UNTRUSTED, reasons=("no tests were collected (pytest exit 5)",)
        )
    internal = raised_by_the_code(run, parsed)
    if internal is not None:
        where = f"{internal.file}:{internal.line}" if internal.line else internal.file
        why = f"pytest internal error (exit 3) raised by this repository's {where}"
        return Classification(verdict=Verdict.FAILED, reasons=(why,))
    return Classification(verdict=Verdict.FAILED, reasons=(f"exit {run.exit_code}",))


def _timed_out(run: ProcessResult, parsed: ParseResult) -> Classification:
    """Killed at the time limit. A runner that printed its closing summary first had finished
    its tests, and the process then failed to exit (mocha without ``--exit`` beside a server a
    test left open, jest's "did not exit"): its failures are real failures; its all-passed is
    still not green."""
    limit = f"{run.limit_s or run.duration_s:.0f} s"
    counts = parsed.counts
    if not counts.summary_seen:
        return Classification(verdict=Verdict.TIMEOUT, reasons=(f"timed out after {limit}",))
    hung = (
        f"its process did not exit after the runner reported its results (stopped after {limit}):"
        " something the tests opened (a server, a timer, a thread) keeps it alive"
    )
    failed = counts.failing or any(f.kind is Kind.TEST for f in parsed.errors)
    return Classification(verdict=Verdict.FAILED if failed else Verdict.UNTRUSTED, reasons=(hung,))


def _judge_green(run: ProcessResult, parsed: ParseResult, command: str) -> Classification:
    reasons = [why for pattern, why in SUPPRESSIONS if pattern.search(command)]
    counts = parsed.counts
    if counts.summary_seen and counts.ran == 0 and runs_tests(parsed):
        reasons.append("no tests ran")
    elif counts.collected == 0:
        reasons.append("0 tests collected")
    if _is_pytest(parsed) and _PARTIAL_RUN.search(run.merged):
        reasons.append("pytest ran only the last failures (--lf or --sw in its options)")
    explicit = [f for f in parsed.errors if f.error_type]  # bare file:line lines prove nothing
    if counts.failing or explicit:
        failing = counts.failing or len(explicit)
        reasons.append(f"exit 0 but the output reports {failing} failure(s)")
    if reasons:
        return Classification(verdict=Verdict.UNTRUSTED, reasons=tuple(reasons))
    warned = bool(counts.warnings or parsed.warnings)
    return Classification(
        verdict=Verdict.GREEN,
        soft=warned,
        reasons=("green with warnings (soft success)",) if warned else (),
    )


def environment_problem(
    run: ProcessResult, parsed: ParseResult, repo_modules: Collection[str], root: str = ""
) -> Classification | None:
    """Not the code's fault (OP-6): don't send it to the agent. What the output says alone, then
    what it says beside the repository's own files (``root``)."""
    if run.exit_code == 0:
        return None
    return _told_by_output(run, parsed, repo_modules) or (
        _told_by_repository(run, parsed, root) if root else None
    )


def _told_by_repository(
    run: ProcessResult, parsed: ParseResult, root: str
) -> Classification | None:
    return (
        foreign_import(run, root)
        or own_package_not_installed(run, root)
        or unsupported_python(run, parsed, root)
        or submodule_not_checked_out(run, root)
        or unresolved_js_import(run, root)
        or unbuilt_output_in_lint(parsed, root)
    )


def unresolved_js_import(run: ProcessResult, root: str) -> Classification | None:
    """ohash's tests import ``ohash/crypto``, which resolves to dist/ once the build has run."""
    from greenloop.verify import (
        node_packages,  # here: only a failing run with a checkout gets this far
    )

    return _checkout_to_blame(node_packages.unresolved_by_checkout(run.merged, root))


def unbuilt_output_in_lint(parsed: ParseResult, root: str) -> Classification | None:
    """``eslint .`` on a fresh clone: an import of dist/ that only the build writes."""
    from greenloop.verify import node_packages

    errors = [f for f in parsed.failures if f.severity != "warning"]
    if not errors or any(f.code not in node_packages.UNRESOLVED_RULES for f in errors):
        return None
    return _checkout_to_blame(
        node_packages.unbuilt_in_lint([(f.file, f.line or 0, f.message) for f in errors], root)
    )


def _checkout_to_blame(found: Unresolved | None) -> Classification | None:
    if found is None:
        return None
    return Classification(
        verdict=Verdict.ENV_FAILURE,
        reasons=(found.reason,),
        evidence=found.evidence,
        advice=found.advice,
    )


def _told_by_output(
    run: ProcessResult, parsed: ParseResult, repo_modules: Collection[str]
) -> Classification | None:
    if run.exit_code in (126, 127) or run.error:
        why = run.error or f"exit {run.exit_code}: the command could not be run"
        gone = re.search(_NOT_FOUND, run.merged, re.M) if "not found" in run.merged else None
        return Classification(
            verdict=Verdict.ENV_FAILURE,
            reasons=(why,),
            evidence=gone.group(0).strip() if gone else why,
            missing_command=gone["cmd"] if gone else "",
        )
    # a conftest that imports the project exits 4 on the project's own SyntaxError: code, not env
    conftest = "ImportError while loading conftest" in run.merged
    pytest_code = run.exit_code in (PYTEST_INTERNAL, PYTEST_USAGE) and _is_pytest(parsed)
    if pytest_code and not conftest and raised_by_the_code(run, parsed) is None:
        # structlog without its test group: "Unknown config option: asyncio_…" (a plugin's
        # option) is the last line, the modules that were not installed are the cause
        what = "internal error" if run.exit_code == PYTEST_INTERNAL else "usage error"
        return _module_not_installed(run.merged, repo_modules) or Classification(
            verdict=Verdict.ENV_FAILURE,
            reasons=(f"pytest {what} (exit {run.exit_code})",),
            evidence=_last_line(run.merged),
        )
    unrun = _make_could_not_run(run.merged)
    if unrun:
        return Classification(
            verdict=Verdict.ENV_FAILURE,
            reasons=("a command is not installed",),
            evidence=unrun.group(0).strip(),
            missing_command=unrun["cmd"],
        )
    usage = usage_error(run)
    if usage:
        return Classification(
            verdict=Verdict.ENV_FAILURE,
            reasons=("the verifier's command line is wrong (a usage error)",),
            evidence=usage,
            advice="Fix the stage's command (greenloop.toml, or the command after --), then re-run.",
        )
    old = toolchain_too_old(run)
    if old is not None:
        return old
    text = run.merged
    missing = _module_not_installed(text, repo_modules)
    if missing is not None:
        return missing
    theirs = (
        dependencies_only(run, parsed)
        or crash_in_dependencies(parsed)
        or hooks_of_an_older_pytest(text)
        or unset_variable(parsed)
    )
    if theirs is not None:
        return theirs
    for pattern, why in ENV_PATTERNS:
        m = re.search(pattern, text, re.M)
        if m:
            gone = re.match(_NOT_FOUND, m.group(0), re.M)
            return Classification(
                verdict=Verdict.ENV_FAILURE,
                reasons=(why,),
                evidence=m.group(0).strip(),
                missing_command=gone["cmd"] if gone else "",
            )
    return None


def raised_by_the_code(run: ProcessResult, parsed: ParseResult) -> Failure | None:
    """A pytest INTERNALERROR (exit 3) whose deepest frame outside the standard library is this
    repository's own file (parsers/pytest.py reads it): a project module that raises SystemExit
    at import, the project's own plugin or conftest hook. The code's failure, for the agent that
    wrote it; pytest's, a plugin's or a library's frame stays the environment's."""
    if run.exit_code != PYTEST_INTERNAL:
        return None
    crashes = (f for f in parsed.failures if f.code == INTERNAL_ERROR)
    return next((f for f in crashes if _repository_file(f.file)), None)


def _module_not_installed(text: str, repo_modules: Collection[str]) -> Classification | None:
    missing = missing_third_party(text, repo_modules)
    if not missing:
        return None
    return Classification(
        verdict=Verdict.ENV_FAILURE,
        reasons=(f"module {missing!r} is not installed",),
        evidence=f"No module named '{missing}'",
        missing_module=missing,
    )


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


def _make_could_not_run(text: str) -> re.Match[str] | None:
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
    if not first.frames or not in_dependencies(first.file) or any(map(_repository_file, places)):
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


def _repository_file(path: str) -> bool:
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


def missing_third_party(text: str, repo_modules: Collection[str]) -> str:
    """The first missing module that is not the project's own (nor a typo of one)."""
    own = set(repo_modules)
    for m in re.finditer(_NO_MODULE, text):
        name = m.group(1)
        top = name.split(".")[0]
        if top in own or _close_match(top, own):
            continue  # the project's own module, or a misspelling of it: a code error
        return name
    return ""


def foreign_import(run: ProcessResult, root: str) -> Classification | None:
    """pytest's "import file mismatch" when the module came from outside the repository: the
    environment imports another checkout's copy (an editable install of a second clone) or a moved
    tree's stale bytecode. Inside it, two test files share a basename: the code's to fix."""
    if "import file mismatch" not in run.merged:
        return None
    home = os.path.realpath(root)
    for m in re.finditer(_MISMATCH, run.merged):
        path = os.path.realpath(m["path"])  # as pytest prints it, resolved as the root is
        if os.path.isabs(m["path"]) and os.path.commonpath([path, home]) != home:
            return Classification(
                verdict=Verdict.ENV_FAILURE,
                reasons=(
                    f"pytest imported {m['module']} from outside this repository: the environment "
                    "has another copy of it (reinstall it from here: pip install -e .; or remove "
                    "stale __pycache__)",
                ),
                evidence=f"imported module '{m['module']}' has this __file__ attribute: {path}",
            )
    return None


def own_package_not_installed(run: ProcessResult, root: str) -> Classification | None:
    """``No module named 'pkg'`` while the repository has ``src/pkg``: a src layout nobody installed
    into the verifier's environment (a fresh clone, no ``pip install -e .``). A package the code
    no longer has, or a misspelt one, stays the code's failure."""
    if "No module named" not in run.merged:
        return None
    for m in re.finditer(_NO_MODULE, run.merged):
        name = m.group(1)
        src = os.path.join(root, "src", name)
        if "." in name or os.path.exists(os.path.join(root, name)):
            continue
        if os.path.isfile(os.path.join(src, "__init__.py")) or os.path.isfile(f"{src}.py"):
            return Classification(
                verdict=Verdict.ENV_FAILURE,
                reasons=(
                    f"the project's own package {name!r} (src/{name}) is not installed where the "
                    "verifier runs",
                ),
                evidence=m.group(0),
                advice="Install the project there (`pip install -e .`), then re-run.",
            )
    return None


def submodule_not_checked_out(run: ProcessResult, root: str) -> Classification | None:
    """A file the run could not find inside a git submodule nobody checked out (a clone without
    ``--recurse-submodules``: tomlkit's tests read ``tests/toml-test``, an empty directory)."""
    if "No such file or directory" not in run.merged:
        return None
    for path in _submodule_paths(root):
        full = os.path.join(root, path)
        if os.path.isdir(full) and os.listdir(full):
            continue
        inside = re.compile(rf"(?<![\w.-]){re.escape(path)}/")
        for line in run.merged.splitlines():
            if "No such file or directory" in line and inside.search(line):
                return Classification(
                    verdict=Verdict.ENV_FAILURE,
                    reasons=(f"the git submodule {path} is not checked out",),
                    evidence=line.strip(),
                    advice="Check out the submodules (`git submodule update --init --recursive`), "
                    "then re-run.",
                )
    return None


def _submodule_paths(root: str) -> list[str]:
    try:
        with open(os.path.join(root, ".gitmodules"), encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError):
        return []
    return [m.group(1).strip("/") for m in re.finditer(r"^\s*path\s*=\s*(.+?)\s*$", text, re.M)]


def stale_install(parsed: ParseResult, root: str) -> Classification | None:
    """The tests imported the project's own package from a copy installed without ``-e`` that
    differs from the tree: whatever the exit code, the run says nothing about this tree, and no
    edit reaches it (the agent would "fix" src/ and see the same failure)."""
    if not (parsed.site_copies and root):
        return None
    from greenloop.parsers import installed

    found = installed.stale_copy(parsed, root)
    if found is None:
        return None
    name, path, changed = found
    copy = _under(path, root)
    if "/site-packages/" in path or "/dist-packages/" in path:
        where = f"a copy installed without -e ({copy})"
        python = _under(os.path.join(path.split("/lib/python", 1)[0], "bin", "python"), root)
        install = f"`{python} -m pip install -e .`"
    else:  # an editable install of another clone or worktree of the project
        where, install = f"another checkout ({copy})", "`pip install -e .` from here"
    return Classification(
        verdict=Verdict.ENV_FAILURE,
        reasons=(
            f"the tests imported {name} from {where}, not from this repository, and {changed} "
            "differs from it: the run did not test this tree",
        ),
        evidence=f"{name} imported from {copy}",
        advice=f"Install this checkout in editable mode where the tests run ({install}), then "
        "re-run.",
    )


def _under(path: str, root: str) -> str:
    """``path`` relative to ``root`` when inside it, else as it is."""
    rel = os.path.relpath(path, root)
    return path if rel.startswith("..") else rel


def unsupported_python(run: ProcessResult, parsed: ParseResult, root: str) -> Classification | None:
    """The tests ran under a Python the project's ``requires-python`` excludes."""
    if not parsed.python:
        return None
    from greenloop.verify import pyversion  # only for a failing run the plugin saw

    try:
        with open(os.path.join(root, "pyproject.toml"), encoding="utf-8") as handle:
            spec = pyversion.requires_python(handle.read())
    except (OSError, UnicodeDecodeError):
        return None
    if not spec or pyversion.satisfies(parsed.python, spec):
        return None
    return Classification(
        verdict=Verdict.ENV_FAILURE,
        reasons=(
            f"the tests ran under Python {parsed.python}, which this project does not support "
            f"(pyproject.toml: requires-python = {spec!r})",
        ),
        evidence=f"Python {parsed.python}; requires-python {spec}",
        advice="Run the verifier with a Python the project supports (a venv of that version), "
        "then re-run.",
    )


def worst(verdicts: Collection[Verdict]) -> Verdict:
    return min(verdicts, key=SEVERITY.index, default=Verdict.GREEN)


# Parser families whose summary counts tests (linters count findings: 0 is their clean result).
TEST_RUNNERS = frozenset(
    {"pytest", "unittest", "cargo", "go", "junit", "ruby", "generic", "mocha", "uvu", "ava", "tap"}
)


def runs_tests(parsed: ParseResult) -> bool:
    return any(tool in TEST_RUNNERS for tool in parsed.tool.split("+"))


def _is_pytest(parsed: ParseResult) -> bool:
    return "pytest" in parsed.tool


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _close_match(name: str, names: Collection[str]) -> bool:
    import difflib  # only for a missing module the repository does not provide

    return bool(difflib.get_close_matches(name, names, n=1, cutoff=0.75))

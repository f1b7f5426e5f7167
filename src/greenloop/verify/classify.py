"""One stage's run + parse -> Verdict: green, failed, env_failure, timeout, killed or untrusted."""

from __future__ import annotations

import re
from collections.abc import Collection

from greenloop.parsers.model import INTERNAL_ERROR, Failure, Kind, ParseResult
from greenloop.processes.process import ProcessResult
from greenloop.verify.classify_output import (
    crash_in_dependencies,
    dependencies_only,
    ended_before_summary,
    hooks_of_an_older_pytest,
    make_could_not_run,
    repository_file,
    toolchain_too_old,
    unset_variable,
    usage_error,
)
from greenloop.verify.classify_plugins import (
    ini_plugin,
    missing_async_plugin,
    option_plugin,
    refused_advice,
    refused_options,
    skipped_async_tests,
)
from greenloop.verify.classify_repository import (
    foreign_import,
    module_not_installed,
    own_package_not_installed,
    stale_install,
    submodule_not_checked_out,
    unbuilt_output_in_lint,
    unresolved_js_import,
    unsupported_python,
)
from greenloop.verify.verdict import Classification, Verdict, runs_tests

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
# pytest's header when --lf or --sw deselected what passed before (greenloop's plugin turns them
# off; a run without it, e.g. under tox, which does not pass PYTEST_PLUGINS, prints these)
_PARTIAL_RUN = re.compile(
    r"^(?:run-last-failure: rerun previous \d+ failure|stepwise: skipping \d+ already passed)", re.M
)
# pytest: 3 internal error, 4 usage error (bad option, missing path), 5 no tests collected.
PYTEST_INTERNAL, PYTEST_USAGE, PYTEST_NO_TESTS = 3, 4, 5


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
        return (
            skipped_async_tests(run, parsed, root)
            or ended_before_summary(run, parsed)
            or _judge_green(run, parsed, command)
        )
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
    return _told_by_output(run, parsed, repo_modules, root) or (
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


def _told_by_output(
    run: ProcessResult, parsed: ParseResult, repo_modules: Collection[str], root: str = ""
) -> Classification | None:
    """What the output says, asked in this order: the first answer wins (``root``: where the
    project declares a plugin the output shows missing)."""
    text = run.merged
    return (
        _could_not_run(run)
        or _pytest_refused(run, parsed, repo_modules, root)
        or missing_async_plugin(run, parsed, root)
        or _make_could_not_run_a_tool(text)
        or _wrong_command_line(run)
        or toolchain_too_old(run)
        or module_not_installed(text, repo_modules)
        or dependencies_only(run, parsed)
        or crash_in_dependencies(parsed)
        or hooks_of_an_older_pytest(text)
        or unset_variable(parsed)
        or _known_environment_line(text)
    )


def _could_not_run(run: ProcessResult) -> Classification | None:
    if not (run.exit_code in (126, 127) or run.error):
        return None
    why = run.error or f"exit {run.exit_code}: the command could not be run"
    gone = re.search(_NOT_FOUND, run.merged, re.M) if "not found" in run.merged else None
    return Classification(
        verdict=Verdict.ENV_FAILURE,
        reasons=(why,),
        evidence=gone.group(0).strip() if gone else why,
        missing_command=gone["cmd"] if gone else "",
    )


def _pytest_refused(
    run: ProcessResult, parsed: ParseResult, repo_modules: Collection[str], root: str = ""
) -> Classification | None:
    # a conftest that imports the project exits 4 on the project's own SyntaxError: code, not env
    conftest = "ImportError while loading conftest" in run.merged
    pytest_code = run.exit_code in (PYTEST_INTERNAL, PYTEST_USAGE) and _is_pytest(parsed)
    if not pytest_code or conftest or raised_by_the_code(run, parsed) is not None:
        return None
    # structlog without its test group: "Unknown config option: asyncio_…" (a plugin's
    # option) is the last line, the modules that were not installed are the cause
    what = "internal error" if run.exit_code == PYTEST_INTERNAL else "usage error"
    refused = refused_options(run) if run.exit_code == PYTEST_USAGE else _internal_line(parsed)
    plugin, where = option_plugin(refused, root)
    if not plugin:
        plugin, where = ini_plugin(run.merged, root)
    why = f"pytest {what} (exit {run.exit_code})"
    return module_not_installed(run.merged, repo_modules) or Classification(
        verdict=Verdict.ENV_FAILURE,
        reasons=(f"{why}: the run needs {plugin}, not installed" if plugin else why,),
        evidence=refused or _last_line(run.merged),
        advice=refused_advice(plugin, where),
    )


def _internal_line(parsed: ParseResult) -> str:
    """The exception an INTERNALERROR ended with, not the summary line below it."""
    crash = next((f for f in parsed.failures if f.code == INTERNAL_ERROR), None)
    if crash is None or not crash.error_type:
        return ""
    return f"INTERNALERROR> {': '.join(p for p in (crash.error_type, crash.message) if p)}"


def _make_could_not_run_a_tool(text: str) -> Classification | None:
    unrun = make_could_not_run(text)
    if not unrun:
        return None
    return Classification(
        verdict=Verdict.ENV_FAILURE,
        reasons=("a command is not installed",),
        evidence=unrun.group(0).strip(),
        missing_command=unrun["cmd"],
    )


def _wrong_command_line(run: ProcessResult) -> Classification | None:
    usage = usage_error(run)
    if not usage:
        return None
    return Classification(
        verdict=Verdict.ENV_FAILURE,
        reasons=("the verifier's command line is wrong (a usage error)",),
        evidence=usage,
        advice="Fix the stage's command (greenloop.toml, or the command after --), then re-run.",
    )


# a line of a compared value or a diff (`- [Error: Connection refused] {`, `+ 'ECONNREFUSED'`):
# what a test compared, never what the machine said
_DIFF_LINE = re.compile(r"^[ \t]*[-+][ \t]*[\[{('\"]")


def _known_environment_line(text: str) -> Classification | None:
    for pattern, why in ENV_PATTERNS:
        m = next(
            (m for m in re.finditer(pattern, text, re.M) if not _DIFF_LINE.match(m.group(0))), None
        )
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
    return next((f for f in crashes if repository_file(f.file)), None)


def _is_pytest(parsed: ParseResult) -> bool:
    return "pytest" in parsed.tool


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""

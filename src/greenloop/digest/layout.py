"""The digest's sections, most important first; the budget shortens from the end."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from greenloop.digest.anchor import EditAnchor
from greenloop.digest.budget import Section
from greenloop.digest.clusters import common_spot, render_others, shared_location
from greenloop.digest.declared import declared_install
from greenloop.digest.first import render_first
from greenloop.digest.frames import first_location, is_project, relative
from greenloop.digest.values import direct_ids
from greenloop.parsers.generic import MAX_LINE, rstrip_lines
from greenloop.parsers.model import Counts, Failure, Kind
from greenloop.verify.cascade import CheckResult, StageRun
from greenloop.verify.classify import Verdict, runs_tests

TAIL_LINES = 40
FIRST_WINDOW = 15
# The generic fallback shows the first failure marker's window, not only a blind tail (issue 10).
_MARKER = re.compile(r"FAIL|✘|✖|\bnot ok\b|Error:")
# pyflakes/ruff codes for what fails when the code runs or imports: F821 undefined name, F822/F823,
# F811 redefinition, F63x/F7xx misuse, E9xx syntax and io errors; ruff's invalid-syntax
_RUNTIME = re.compile(r"F82\d|F811|F63\d|F7\d\d|E9\d\d|invalid-syntax|syntax-error")
_ORDINAL = {1: "1st", 2: "2nd", 3: "3rd"}


@dataclass(frozen=True, slots=True, kw_only=True)
class History:
    """What the loop knows from earlier iterations (all optional)."""

    previous_failing: tuple[str, ...] | None = None
    """Failure ids of the previous iteration, for progress framing (OP-7)."""
    times_seen: int = 0
    """How many times this same signature has appeared, this one included (case 4)."""
    earlier_files: tuple[str, ...] = ()
    """Files earlier attempts changed."""
    only_before_edits: bool = False
    """Every earlier sighting was the baseline's: no earlier attempt of the agent saw it."""
    subset: bool = False
    """The run covered only the previously failing tests."""
    reverted: str = ""
    """Why the last edit was rolled back, if it was."""
    flaky: tuple[str, ...] = ()


def primary(run: StageRun) -> tuple[Failure, ...]:
    errors = tuple(f for f in run.parsed.failures if f.severity == "error")
    return (
        runtime_first(errors or tuple(run.parsed.failures))
        if run.verdict is not Verdict.GREEN
        else ()
    )


def runtime_first(failures: tuple[Failure, ...]) -> tuple[Failure, ...]:
    """Lint problems that break at run time (undefined name, redefinition, syntax) before style."""
    return tuple(sorted(failures, key=lambda f: f.kind is Kind.LINT and not _RUNTIME.match(f.code)))


def sections(
    result: CheckResult,
    run: StageRun | None,
    failures: tuple[Failure, ...],
    anchor: EditAnchor | None,
    history: History,
    root: Path,
) -> list[Section]:
    out = [Section(header(result, run, history, root), keep=True)]
    if run is None:
        return out + _soft_warnings(result)
    if run.verdict is Verdict.ENV_FAILURE:
        return [*out, Section(_env_advice(run, root), keep=True), Section(_tail(run))]
    if history.reverted:
        out.append(
            Section(f"Your last edit was reverted: {history.reverted}", keep=True, note=True)
        )
    if failures:
        first = failures[0]
        out.append(Section(render_first(first, root), keep=True))
        progress = (
            _crashed_progress(failures, history) if run.crashed else _progress(failures, history)
        )
        if progress:
            out.append(Section(progress, keep=True, note=True))
        if history.times_seen >= 2:
            out.append(Section(_repeat_note(history), keep=True, note=True))
        if anchor:
            out.append(Section(anchor.describe(first_location(first, root)), keep=True, note=True))
        common = shared_location(failures, root)
        if common:
            out.append(Section(common, keep=True))
        if len(failures) > 1:
            spot = common_spot(failures, root)
            direct = direct_ids(failures[1:], root, anchor)
            out.append(Section(render_others(failures, root, spot[0] if spot else "", direct)))
        warned = len(run.parsed.failures) - len(failures)
        if warned > 0:
            out.append(Section(f"(+{warned} warning{'s' * (warned != 1)} not shown)"))
    else:
        if anchor:
            out.append(Section(anchor.describe(None), keep=True, note=True))
        out.append(Section(_tail(run), keep=run.verdict is not Verdict.GREEN))
    return out


SHOWN_WARNINGS = 3


def _soft_warnings(result: CheckResult) -> list[Section]:
    """A soft success names what it warned about (an obsolete snapshot: a test renamed or gone)."""
    warned = [f for r in result.runs if r.classification.soft for f in r.parsed.warnings]
    shown = [f"  {f.id}: {f.message}" for f in warned[:SHOWN_WARNINGS]]
    more = [f"  (+{len(warned) - SHOWN_WARNINGS} more)"] if len(warned) > SHOWN_WARNINGS else []
    return [Section("\n".join(["Warnings:", *shown, *more]))] if shown else []


def _running(run: StageRun) -> str:
    """The tests the runner was inside when it was killed (the plugin's start without an end):
    the hang's likely place, which the failures reported before it are not (filelock)."""
    inside = run.parsed.killed
    if not inside:
        return ""
    more = f" (+{len(inside) - 3} more)" if len(inside) > 3 else ""
    return f" It was running {', '.join(inside[:3])}{more} when it was killed."


def header(
    result: CheckResult,
    run: StageRun | None,
    history: History,
    root: Path = Path("."),
    *,
    command: bool = True,
) -> str:
    """The verdict, once: what ran (``command``: its words as the user types them), how it ended."""
    if run is None:
        stages = ", ".join(r.stage.name for r in result.runs)
        soft = any(r.classification.soft for r in result.runs)
        note = " with warnings (soft success)" if soft else ""
        ran = [_count_words(r.parsed.counts) for r in result.runs if r.parsed.counts.ran]
        counts = f": {'; '.join(ran)}" if ran else ""  # the count is the evidence of a real green
        return f"The verifier passed{note} ({stages}, {result.duration_s:.1f} s){counts}."
    res = run.result
    said = [f"`{shown_command(run.stage.display, root)}`"] if command else []
    if len(result.cascade.stages) > 1:
        said.append(f"stage {run.stage.name}")
    where = ", ".join([*said, f"{res.duration_s:.1f} s"])
    subset = " on the previously failing tests only" if history.subset else ""
    verdict = run.verdict
    if verdict is Verdict.TIMEOUT and run.stage.timeout_origin:  # a limit the user chose
        return (
            f"The verifier timed out after {res.limit_s or res.duration_s:g} s, the limit set by "
            f"{run.stage.timeout_origin} ({where}){subset}, and was killed: the suite may need "
            f"longer than that, or the code under test hangs.{_running(run)}"
        )
    if verdict is Verdict.TIMEOUT:
        return (
            f"The verifier timed out after {res.limit_s or res.duration_s:.0f} s{f' ({where})' if said else ''}{subset} and was killed: "
            f"likely an infinite loop or a hang in the code under test.{_running(run)}"
        )
    if verdict is Verdict.KILLED:
        reason = "; ".join(run.classification.reasons)
        return f"The verifier was killed ({reason}; {where}){subset}: coverage is incomplete, nothing here counts as fixed."
    if verdict is Verdict.ENV_FAILURE:
        return (
            f"ENVIRONMENT FAILURE, not a code problem ({where}): "
            f"{'; '.join(run.classification.reasons)}. Not sent to the agent."
        )
    reasons = "; ".join(run.classification.reasons)
    if verdict is Verdict.UNTRUSTED and res.timed_out:
        return f"The verifier's result can't be trusted ({where}): {reasons}."
    if verdict is Verdict.UNTRUSTED:
        return f"The verifier exited {res.exit_code} but the result can't be trusted ({where}): {reasons}."
    hung = f" {reasons[:1].upper()}{reasons[1:]}." if res.timed_out else ""  # failures came first
    return (
        f"The verifier failed (exit {res.exit_code}, {where}){subset}: {_counts_line(run)}.{hung}"
    )


# an interpreter or tool by its absolute path outside the repository (`/opt/venv/bin/python`)
_BIN_PATH = re.compile(r"(?<![^\s'\"=])/(?:[^\s'\"]+/)?bin/(?=[\w.+-]+(?:\s|$))")


def shown_command(command: str, root: Path) -> str:
    """The command as the user would type it: repository paths relative, an interpreter or tool
    outside it by its bare name (``python -m pytest``, not the venv's absolute path)."""
    inside = str(root).rstrip("/") + "/"
    if inside not in {"/", "./"}:
        command = re.sub(rf"(?<![^\s'\"=]){re.escape(inside)}", "", command)
    return _BIN_PATH.sub("", command)


def _count_words(c: Counts) -> str:
    parts = [
        f"{n} {word}"
        for n, word in (
            (c.failed, "failed"),
            (c.errors, "error" if c.errors == 1 else "errors"),
            (c.passed, "passed"),
            (c.skipped, "skipped"),
            (c.xfailed, "xfailed"),
            (c.xpassed, "xpassed"),
            (c.subtests_failed, "subtests failed"),
            (c.subtests_passed, "subtests passed"),
        )
        if n
    ]
    return ", ".join(parts) or "nothing ran"


def _counts_line(run: StageRun) -> str:
    c = run.parsed.counts
    # a test summary (jest's "Tests: 25 passed, 25 total") though no test failed: an obsolete
    # snapshot failed the run
    tests = runs_tests(run.parsed) or any(f.kind is Kind.TEST for f in run.parsed.failures)
    tests = tests or bool(c.collected)
    if c.summary_seen and (c.ran or c.skipped) and tests:  # one wording for every test runner
        return _count_words(c)
    errors = [f for f in run.parsed.failures if f.severity == "error"]
    failed_tests = sum(f.kind is Kind.TEST for f in errors)
    if failed_tests == len(errors) and errors and not c.summary_seen:  # a hang, a crash mid-run
        passed = f", {c.passed} passed" if c.passed else ""
        return f"{failed_tests} failed{passed} before the run ended early, without its summary"
    if errors:
        files = len({f.file for f in errors if f.file})
        noun = "problem" if len(errors) == 1 else "problems"
        return f"{len(errors)} {noun}" + (f" in {files} file{'s' * (files != 1)}" if files else "")
    if run.parsed.counts.summary_seen:
        return "the summary reports no failures"
    return "the output could not be parsed in full; its relevant tail follows"


def _crashed_progress(failures: tuple[Failure, ...], history: History) -> str:
    """No test ran: the tests that failed before are not known to pass (issue 26)."""
    before = len(set(history.previous_failing or ()) - {f.id for f in failures})
    if not before:  # the first run, or the same crash again (the repeat note says so)
        return ""
    them = "it is" if before == 1 else "they are"
    return (
        f"PROGRESS: none: the run stopped before any test ran, so the {before} previously "
        f"failing test{'s' * (before != 1)} did not run ({them} not fixed)."
    )


def _progress(failures: tuple[Failure, ...], history: History) -> str:
    if history.previous_failing is None:
        return f"Flaky (ignore): {', '.join(history.flaky)}." if history.flaky else ""
    before, now = set(history.previous_failing), {f.id for f in failures}
    fixed, still, new = before - now, before & now, now - before
    parts = []
    if before:
        parts.append(
            f"{len(fixed)} of {len(before)} previously failing now pass; {len(still)} still {'fails' if len(still) == 1 else 'fail'}."
        )
    if new:
        names = ", ".join(sorted(new)[:5]) + (f" (+{len(new) - 5} more)" if len(new) > 5 else "")
        parts.append(f"New failures: {names}.")
    if history.flaky:
        parts.append(f"Flaky (ignore): {', '.join(history.flaky)}.")
    return "PROGRESS: " + " ".join(parts) if parts else ""


def _repeat_note(history: History) -> str:
    n = history.times_seen
    nth = _ORDINAL.get(n, f"{n}th")
    if history.only_before_edits:
        why = "it was there before the first edit, and the last edit did not change it"
    else:
        why = f"earlier attempts changed {', '.join(history.earlier_files) or 'no files'}"
    return f"This is the {nth} time this error appears; {why}. A different hypothesis is needed."


# Import names whose pip distribution is called something else.
PIP_NAMES = {
    "yaml": "PyYAML", "PIL": "Pillow", "cv2": "opencv-python", "sklearn": "scikit-learn",
    "bs4": "beautifulsoup4", "dateutil": "python-dateutil", "jwt": "PyJWT", "dotenv": "python-dotenv",
    "Crypto": "pycryptodome", "attr": "attrs", "psycopg2": "psycopg2-binary", "MySQLdb": "mysqlclient",
}  # fmt: skip
_FRAME_REF = re.compile(r'^(\S+\.py):(\d+): in |File "([^"]+\.py)", line (\d+)', re.M)


def _env_advice(run: StageRun, root: Path) -> str:
    c = run.classification
    lines = [f"What failed: {c.evidence or '; '.join(c.reasons)}"]
    if c.missing_module:
        top = c.missing_module.split(".")[0]
        needer = _importer(run.result.merged, c.missing_module, root)
        if needer:
            lines.append(f"Needed by: {needer}")
        lines.append(
            _locked_python_install(root)
            or declared_install(c.missing_module, root, PIP_NAMES)
            or f"Install it where the verifier runs (`pip install {PIP_NAMES.get(top, top)}`), then re-run."
        )
    elif c.missing_command or run.result.exit_code == 127:
        tool = c.missing_command or run.stage.argv[0]  # `sh -c "ruff ."`: ruff is missing, not sh
        lines.append(
            _node_install(tool, root) or f"Install `{tool}` or fix the command, then re-run."
        )
    elif c.advice:
        lines.append(c.advice)
    else:
        lines.append(_unlocked(c.evidence, root) or "Fix the environment, then re-run.")
    lines.append("The agent has not been asked to change code for this.")
    return "\n".join(lines)


# a Python project's lock file -> the command that installs what it locks
PYTHON_LOCKS = (
    ("uv.lock", "uv sync"),
    ("poetry.lock", "poetry install"),
    ("pdm.lock", "pdm install"),
    ("Pipfile.lock", "pipenv install --dev"),
)


def _locked_python_install(root: Path) -> str:
    """A project that locks its dependencies installs them with its own tool, not one pip
    install at a time (and Poetry's venv is not the one pip would install into)."""
    for lock, command in PYTHON_LOCKS:
        if (root / lock).is_file():
            return f"Install the project's locked dependencies (`{command}`: {lock}), then re-run."
    return ""


# the lockfile says which package manager installs node_modules
LOCKFILES = (("pnpm-lock.yaml", "pnpm"), ("yarn.lock", "yarn"), ("bun.lockb", "bun"))

NPM_LOCKS = ("package-lock.json", "npm-shrinkwrap.json", *(lock for lock, _ in LOCKFILES))


def _unlocked(evidence: str, root: Path) -> str:
    """What broke is inside node_modules of a project with no lockfile (mitt): the install took
    today's releases, not the versions the project last passed with."""
    parts = evidence.split(":", maxsplit=1)[0].split("/")
    if parts[0] != "node_modules" or len(parts) < 3 or not (root / "package.json").is_file():
        return ""
    if _locked(root):
        return ""
    package = "/".join(parts[1:3]) if parts[1].startswith("@") else parts[1]
    return (
        "This project has no lockfile: the install took today's releases of its dependencies, "
        f"not the ones it last passed with. Pin the one that broke ({package}, or the package "
        "that pulls it in) in package.json, or install the versions of its last green CI run, "
        "then re-run."
    )


def _locked(root: Path) -> bool:
    """A lockfile the repository commits (the one `npm install` just wrote pins nothing)."""
    from greenloop import git  # only for an environment failure inside node_modules

    if git.get_root(root) is None:
        return any((root / lock).exists() for lock in NPM_LOCKS)
    return bool(git.git(root, "ls-files", "--", *NPM_LOCKS).stdout.strip())


def _node_install(tool: str, root: Path) -> str:
    """A node project whose dependencies are not installed (a fresh clone: `mocha: not found`)."""
    from greenloop.detect.stages import package_json  # only for a command that is missing

    lock = next((lock for lock, m in LOCKFILES if m == tool and (root / lock).exists()), "")
    if lock and not (root / "node_modules").is_dir():  # tiny-invariant's `yarn jest`, fresh
        return (
            f"Install `{tool}` (`corepack enable`, or `npm install -g {tool}`), then run "
            f"`{tool} install` (this project's {lock}), then re-run."
        )
    if tool in ("npm", "npx", *(m for _, m in LOCKFILES)):
        return ""  # the package manager itself is missing: install it first
    manifest = package_json(root)
    if not manifest:
        return ""
    manager = next((m for lock, m in LOCKFILES if (root / lock).exists()), "npm")
    declared = {
        name
        for key in ("dependencies", "devDependencies")
        if isinstance(deps := manifest.get(key), dict)
        for name in deps
    }
    if declared and not (root / "node_modules").is_dir():
        return f"node_modules is missing here: run `{manager} install`, then re-run."
    if tool in declared:
        return (
            f"`{tool}` is in package.json but not installed: run `{manager} install`, then re-run."
        )
    return ""


def _importer(text: str, module: str, root: Path) -> str:
    """The project file whose import failed: the last project frame before the error."""
    end = text.find(f"No module named '{module}'")
    refs = [m for m in _FRAME_REF.finditer(text, 0, end if end >= 0 else len(text))]
    for m in reversed(refs):
        path, line = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        if is_project(path, root):
            return f"{relative(path, root)}:{line}"
    return ""


def _tail(run: StageRun) -> str:
    body = rstrip_lines(run.result.merged).strip("\n")
    if not body:
        return "(the command printed nothing)"
    lines = body.splitlines()
    first = next((i for i, line in enumerate(lines) if _MARKER.search(line[:MAX_LINE])), None)
    if first is None or first >= len(lines) - TAIL_LINES:
        return "OUTPUT (tail):\n" + _excerpt(lines, max(len(lines) - TAIL_LINES, 0), len(lines))
    start = max(first - 2, 0)
    stop = min(first + FIRST_WINDOW, len(lines))
    end = max(stop, len(lines) - TAIL_LINES // 2)
    head = _excerpt(lines, start, stop)
    return (
        f"OUTPUT (first failure, then the end):\n{head}\n{_excerpt(lines, end, len(lines), stop)}"
    )


def _excerpt(lines: list[str], start: int, stop: int, shown_to: int = 0) -> str:
    """``lines[start:stop]``, after a count of the lines skipped since ``shown_to``."""
    skipped = start - shown_to
    cut = f"[... {skipped} lines ...]\n" if skipped > 0 else ""
    return cut + "\n".join(lines[start:stop])


def last_lines(run: StageRun, n: int) -> str:
    return "\n".join(run.result.merged.strip().splitlines()[-n:])

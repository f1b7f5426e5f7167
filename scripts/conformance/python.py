"""Ground truth for the Python runners: pytest (JUnit XML), unittest (its result API), mypy and ruff (JSON).

Each function re-runs the mutant with the runner's structured report and reads only that report, never
greenloop's parsers. The verdict class comes from the runner's exit code and that report.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import shutil
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path
from typing import Any

from common import Facts, Mutation, Project, Run, Runner, cap, install, run, run_env, runner_env

MESSAGE_MAX = 120
CRASH = re.compile(
    r"^E\s+([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning)|AssertionError)(?::\s*(.*))?$"
)
HYPOTHESIS_NOTES = ("Falsifying ", "Failing test case:", "You can reproduce", "Explanation:")
UNITTEST_TRUTH = Path(__file__).resolve().parent / "unittest_truth.py"
INTERNAL_PLUGIN = Path(__file__).resolve().parent / "glreal_internalerror.py"
JUNIT = ("-o", "junit_family=xunit1", "-p", INTERNAL_PLUGIN.stem)
ENV_DIRS = ("/site-packages/", "/dist-packages/", "/.tox/", "/.nox/", "/.venv/")


def with_args(argv: tuple[str, ...] | str, *extra: str) -> tuple[str, ...] | str:
    if isinstance(argv, str):
        return " ".join([argv, *extra])
    return (*argv, *extra)


def frame_of(project: Project, runner: Runner, mutation: Mutation | None) -> str | None:
    """The mutated ``file:line``, relative to the directory the runner ran in."""
    if mutation is None:
        return None
    path = os.path.relpath(project.root / mutation.file, project.root / runner.cwd)
    return f"{path}:{mutation.line}"


def short(message: str) -> str:
    """The first non-empty line, cut at a word boundary: a substring a good digest should keep."""
    first = next((ln.strip() for ln in message.splitlines() if ln.strip()), "")
    if len(first) <= MESSAGE_MAX:
        return first
    cut = first[:MESSAGE_MAX]
    return cut[: cut.rfind(" ")] if " " in cut else cut


def crash_line(text: str) -> tuple[str | None, str | None]:
    """(type, message) from pytest's last ``E   Type: message`` line of a JUnit failure body.

    An empty message (``AssertionError:`` then a multi-line text) takes the next non-empty E line.
    """
    found: tuple[str | None, str | None] = (None, None)
    pending = False
    for line in text.splitlines():
        m = CRASH.match(line)
        if m:
            found, pending = (m.group(1).rsplit(".", 1)[-1], m.group(2)), not m.group(2)
        elif pending and line.startswith("E ") and line[1:].strip():
            # hypothesis's notes (``Failing test case: test_x(``) are not the assertion's message
            note = line[1:].strip().startswith(HYPOTHESIS_NOTES)
            found, pending = (found if note else (found[0], line[1:].strip())), False
    return found


# ---- pytest ----


def pytest_truth(project: Project, runner: Runner, done: Run, mutation: Mutation | None) -> Facts:
    cwd = project.root / runner.cwd
    with tempfile.TemporaryDirectory(prefix="glreal-junit-") as tmp:
        xml = Path(tmp) / "report.xml"
        flags = (f"--junitxml={xml}", *JUNIT)
        env = _truth_env(project, runner, tmp)
        if runner.truth == "nox-pytest":  # nox hands its posargs to pytest, not its environment
            argv = with_args(runner.argv, *flags)
        else:  # the run's own argv: a module that parses sys.argv at import sees the same
            argv, env = runner.argv, {**env, "PYTEST_ADDOPTS": shlex.join(flags)}
        again = run(argv, cwd, env, runner.timeout)
        suite = _suite(xml)
        internal = _internal_error(project, runner, Path(tmp))
    cmd = argv if isinstance(argv, str) else " ".join(argv)
    how = (
        f"second run with JUnit XML: {cmd.replace(str(xml), 'report.xml')} (exit {again.exit_code})"
    )
    if "PYTEST_ADDOPTS" in env:
        how += f" with PYTEST_ADDOPTS={shlex.join(flags).replace(str(xml), 'report.xml')}"
    if internal is not None and done.exit_code == 3 and not done.timed_out:
        counts = _session_counts(suite)
        return replace(internal, counts=counts, ground_truth=f"{how}; {internal.ground_truth}")
    if done.timed_out or done.exit_code < 0 or suite is None:
        return (
            _conftest_error(project, runner, done, mutation, how)
            or _startup_crash(project, runner, done, mutation, how)
            or Facts(verdict=_no_report_verdict(done), ground_truth=how)
        )
    failing = _in_run_order(_failing(suite, cwd, project.root), done.stdout)
    counts = _counts(suite)
    facts = dict(failing_ids=tuple(i for i, _ in failing), counts=counts, ground_truth=how)
    if failing:
        kind, message = _failure_type(failing[0][1])
        facts |= dict(error_type=kind, message=message, frame=frame_of(project, runner, mutation))
    verdict = _pytest_verdict(done.exit_code, counts)
    said = [f"{e.get('message', '')}\n{e.text or ''}" for _, e in failing]
    if any(_ASYNC_UNSUPPORTED in s for s in said) and all(map(_no_async_plugin, said)):
        verdict = "env_failure"  # no async plugin installed: every test fails before its code runs
    skips = (e.get("message", "") for e in suite.iter("skipped"))
    if verdict in ("green", "untrusted") and any(_ASYNC_SKIPPED in s for s in skips):
        verdict = "env_failure"  # pytest < 8.4 skips the async tests it cannot run, exit 0
    return Facts(verdict=verdict, **facts)  # type: ignore[arg-type]


_ASYNC_UNSUPPORTED = "async def functions are not natively supported"
_ASYNC_SKIPPED = "async def function and no async plugin installed"


def _no_async_plugin(said: str) -> bool:
    """pytest's own failure of an ``async def`` test no plugin runs, or a fixture not found (one
    such a plugin provides: pytest-asyncio's ``unused_tcp_port``)."""
    return _ASYNC_UNSUPPORTED in said or re.search(r"fixture '\w+' not found", said) is not None


def _session_counts(suite: ET.Element | None) -> dict[str, int] | None:
    """The suite's counts without the ``pytest.internal`` error element junitxml adds for an
    INTERNALERROR (no test: pytest's own line says "no tests ran")."""
    if suite is None:
        return None
    counts = _counts(suite)
    internal = [
        c
        for c in suite.iter("testcase")
        if (c.get("classname"), c.get("name")) == ("pytest", "internal")
    ]
    return counts | {"failed": max(counts["failed"] - len(internal), 0)}


def _truth_env(project: Project, runner: Runner, tmp: str) -> dict[str, str]:
    """The run's own environment, plus the INTERNALERROR plugin (alone on PYTHONPATH)."""
    shutil.copy(INTERNAL_PLUGIN, tmp)
    extra = {"PYTHONPATH": tmp, "GLREAL_INTERNALERROR": str(Path(tmp) / "internalerror.json")}
    return {**run_env(project, runner), **extra}


def _internal_error(project: Project, runner: Runner, tmp: Path) -> Facts | None:
    """pytest's INTERNALERROR, from the exception its ``pytest_internalerror`` hook got
    (glreal_internalerror.py): the code's failure when the deepest frame outside the standard
    library is the checkout's own file (a project module raising SystemExit at import, the
    project's own plugin or conftest hook), the environment's when it is pytest's, a plugin's
    or a library's. The frame is that deepest project frame: the one the traceback names."""
    path = tmp / "internalerror.json"
    if not path.exists():
        return None
    record = json.loads(path.read_text(encoding="utf-8"))
    frames = [f for f in record["frames"] if not f["stdlib"]]
    deepest = frames[-1] if frames else None
    real = _checkout_file(project, deepest["path"]) if deepest else None
    how = "no report: pytest's INTERNALERROR (its pytest_internalerror hook's exception)"
    if real is None or deepest is None:
        return Facts(verdict="env_failure", ground_truth=f"{how}, raised outside the checkout")
    rel = os.path.relpath(real, project.root / runner.cwd)
    return Facts(
        verdict="failed", error_type=record["type"], message=short(record["message"]) or None,
        frame=f"{rel}:{deepest['line']}" if deepest else None,
        ground_truth=f"{how}, raised by the checkout's {rel}",
    )  # fmt: skip


def _checkout_file(project: Project, path: str) -> Path | None:
    """The checkout's file for a traceback path: inside it (not in a venv, tox or nox env), or
    the project's own package as tox/nox installed it (``…/site-packages/pycodestyle.py``, a
    file the checkout has at the same place under its root or src/)."""
    root = os.path.realpath(project.root) + os.sep
    real = os.path.realpath(path)
    if real.startswith(root) and not any(d in real for d in ENV_DIRS):
        return Path(real)
    _, sep, inside = real.partition("-packages/")
    for base in (project.root, project.root / "src") if sep else ():
        if (base / inside).is_file():
            return base / inside
    return None


def _conftest_error(
    project: Project, runner: Runner, done: Run, mutation: Mutation | None, how: str
) -> Facts | None:
    """Exit 4 before any report: a conftest that imports the project hit the project's own error
    (a SyntaxError in the package). The code's failure, not the environment's, unless a module
    is missing. pytest writes no JUnit XML then: the facts are its ``E   Type: message`` line."""
    text = done.stdout + done.stderr
    if done.exit_code != 4 or "ImportError while loading conftest" not in text:
        return None
    kind, message = crash_line(text)
    if kind is None or "No module named" in text:
        return None
    return Facts(
        verdict="failed", error_type=kind, message=short(message or "") or None,
        frame=frame_of(project, runner, mutation),
        ground_truth=f"{how}; no report: pytest's own ImportError while loading conftest",
    )  # fmt: skip


def _startup_crash(
    project: Project, runner: Runner, done: Run, mutation: Mutation | None, how: str
) -> Facts | None:
    """pytest died at start-up, before its session, on the project's own code: pluggy's suite,
    where pytest imports the pluggy under test. Python's traceback then names the project's file
    (``File "<checkout>/src/pluggy/_result.py", line 91``) and its last line is the exception: the
    code's failure. A traceback only through installed files stays the environment's."""
    text = (done.stdout + done.stderr).strip()
    start = text.find("Traceback (most recent call last):")
    if done.exit_code <= 0 or start < 0 or "test session starts" in text[:start]:
        return None
    if f'File "{project.root}/' not in text[start:]:
        return None
    last = re.match(r"^([A-Za-z_][\w.]*(?:Error|Exception)): (.*)$", text.splitlines()[-1])
    if last is None:
        return None
    return Facts(
        verdict="failed", error_type=last.group(1).rsplit(".", 1)[-1], message=short(last.group(2)),
        frame=frame_of(project, runner, mutation),
        ground_truth=f"{how}; no report: Python's traceback of pytest's start-up, through the checkout",
    )  # fmt: skip


def _no_report_verdict(done: Run) -> str:
    if done.timed_out:
        return "timeout"
    return "killed" if done.exit_code < 0 else "env_failure"


def _pytest_verdict(code: int, counts: dict[str, int]) -> str:
    if code == 0:
        return "green" if counts["passed"] else "untrusted"
    if code in (1, 2):  # test failures, or collection errors (a project module that won't import)
        return "failed"
    return "untrusted" if code == 5 else "env_failure"


def _suite(xml: Path) -> ET.Element | None:
    if not xml.exists():
        return None
    root = ET.parse(xml).getroot()
    return root.find("testsuite") if root.tag == "testsuites" else root


def _counts(suite: ET.Element) -> dict[str, int]:
    """The suite's own totals: they count every error report (a module collected twice errs twice)."""
    total, failures, errors, skipped = (
        int(suite.get(k, "0")) for k in ("tests", "failures", "errors", "skipped")
    )
    failed = failures + errors
    subtests = _passed_subtests(suite, total) if not errors else 0  # errors: see above
    passed = total - failed - skipped - subtests
    return {"passed": max(passed, 0), "failed": failed, "skipped": skipped}


def _passed_subtests(suite: ET.Element, total: int) -> int:
    """pytest 9's subtests (unittest ``subTest``, tenacity): each subtest report adds one to the
    suite's ``tests`` but has no ``testcase`` of its own; a failed one is one more ``failure`` in
    its test's element. pytest's summary counts failed subtests as failed and passed ones apart
    (``12 subtests passed``), so they are not passed tests. A failed subtest is told apart only
    when its test has several failures (each is then a subtest's): exact for tenacity's cases."""
    cases = list(suite.iter("testcase"))
    reports = total - len(cases)
    if reports <= 0:
        return 0
    bad = [len(c.findall("failure")) + len(c.findall("error")) for c in cases]
    return reports - sum(n for n in bad if n > 1)


def _failing(suite: ET.Element, cwd: Path, root: Path) -> list[tuple[str, ET.Element]]:
    out = []
    for case in suite.iter("testcase"):
        bad = case.find("failure")
        if bad is None:
            bad = case.find("error")
        if bad is not None:
            out.append((_node_id(case, cwd, root), bad))
    return out


def _in_run_order(
    failing: list[tuple[str, ET.Element]], output: str
) -> list[tuple[str, ET.Element]]:
    """The report's failures in the order the run printed them (``FAILED <id>``): under xdist the
    second run's report lists them in another arrival order; unittest prints ``FAIL: name (id)``. Ids
    the output never names stay last."""

    def printed_at(item: tuple[str, ET.Element]) -> int:
        marks = (f"FAILED {item[0]}", f"ERROR {item[0]}", f"({item[0]})")  # pytest, unittest
        found = [output.find(mark) for mark in marks]
        return min((i for i in found if i >= 0), default=len(output))

    return sorted(failing, key=printed_at)


def _node_id(case: ET.Element, cwd: Path, root: Path) -> str:
    """pytest's node id as its summary prints it (relative to the cwd): the longest classname
    prefix that is a module file (under the cwd or the rootdir), then the classes and the name.

    Not xunit1's ``file``: for a test inherited from a mixin it names the mixin's file.
    """
    classname, name = case.get("classname", ""), case.get("name", "")
    parts = classname.split(".") if classname else []
    for i in range(len(parts), 0, -1):
        module = "/".join(parts[:i]) + ".py"
        for base in (cwd, root):
            if (base / module).is_file():
                path = os.path.relpath(base / module, cwd)
                return "::".join([path, *parts[i:], name])
    return case.get("file") or name  # a collection error: the path is the name


def _failure_type(element: ET.Element) -> tuple[str | None, str | None]:
    body = element.text or ""
    if "\nGot:\n" in body:  # a doctest's Expected/Got: the wrong value is the message
        got = body.split("\nGot:\n", 1)[1]
        return "DocTestFailure", short(got)
    if "\nGot nothing" in body:
        return "DocTestFailure", "Got nothing"
    if "\nDifferences (" in body:  # pytest's --doctest-report udiff/ndiff: the first actual line
        said = body.split("\nDifferences (", 1)[1].splitlines()[1:]
        plus = next(
            (ln.strip() for ln in said if ln.strip().startswith("+") and "+++" not in ln), ""
        )
        return "DocTestFailure", short(plus) or None
    m = re.search(r"^UNEXPECTED EXCEPTION: ([A-Za-z_]\w*)\((.*)\)$", body, re.M)
    if m:  # the traceback's own last line; the repr's arguments when it has none
        last = re.findall(rf"^(?:\w+\.)*{m.group(1)}: (.+)$", body, re.M)
        return m.group(1), short(last[-1] if last else m.group(2).strip("'\""))
    kind, message = crash_line(body)
    if kind is None:  # a rewritten assert: `E   assert ...` lines, then `path:LINE: AssertionError`
        ends = re.findall(r"^\S+:\d+: ([A-Za-z_]\w*)$", body, re.M)
        kind = ends[-1] if ends else None
    attr = element.get("message", "")
    if kind is None:
        m = re.match(r"^([A-Za-z_][\w.]*):\s*(.*)", attr, re.S)
        kind, message = (m.group(1).rsplit(".", 1)[-1], m.group(2)) if m else (None, attr)
    return kind, short(message or attr) or None


# ---- nox: one pytest command per session, the session's posargs appended to it ----


def nox_truth(project: Project, runner: Runner, done: Run, mutation: Mutation | None) -> Facts:
    """pytest's JUnit XML through the session's posargs (``nox -s test -- --junitxml=…``)."""
    argv = runner.argv if isinstance(runner.argv, str) else (*runner.argv, "--")
    return pytest_truth(project, replace(runner, argv=argv), done, mutation)


# ---- tox: the wrapper around pytest ----


def tox_truth(project: Project, runner: Runner, done: Run, mutation: Mutation | None) -> Facts:
    """tox's own ``--result-json`` says which commands ran and their exit codes; each pytest
    command among them is run again, as tox resolved it, with JUnit XML. The counts are the sum over
    those pytest runs (tox stops at the first failing command); the ids, type and message are the
    failing command's."""
    cwd = project.root / runner.cwd
    with tempfile.TemporaryDirectory(prefix="glreal-tox-") as tmp:
        report = Path(tmp) / "tox.json"
        argv = with_args(runner.argv, f"--result-json={report}")
        again = run(argv, cwd, runner_env(project), runner.timeout)
        envs = json.loads(report.read_text(encoding="utf-8"))["testenvs"] if report.exists() else {}
    how = f"tox --result-json (exit {again.exit_code}); each pytest command it ran again with JUnit XML"
    commands = [
        (_env_bin(env), c)
        for env in envs.values()
        if isinstance(env, dict)
        for c in env.get("test", [])
    ]
    if done.timed_out or done.exit_code < 0 or not commands:
        return Facts(verdict=_no_report_verdict(done), ground_truth=how)
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    facts: dict[str, Any] = {}
    verdict = "green" if done.exit_code == 0 else "failed"
    for bindir, command in commands:
        if not _runs_pytest(command["command"]):
            continue
        one = _pytest_command(project, runner, cwd, bindir, tuple(command["command"]))
        if one is None:
            continue
        counts = {k: counts[k] + one.counts[k] for k in counts} if one.counts else counts
        if command["retcode"] == 3 and one.ground_truth and not facts:  # an INTERNALERROR
            verdict = one.verdict
            facts = dict(error_type=one.error_type, message=one.message, frame=one.frame)
            how = f"{how}; {one.ground_truth}"
        elif command["retcode"] != 0 and not facts:
            verdict = _pytest_verdict(command["retcode"], one.counts or counts)
            facts = dict(
                failing_ids=one.failing_ids, error_type=one.error_type, message=one.message,
                frame=frame_of(project, runner, mutation) if one.failing_ids else None,
            )  # fmt: skip
    if verdict == "green" and not counts["passed"]:
        verdict = "untrusted"
    return Facts(verdict=verdict, counts=counts, ground_truth=how, **facts)


def _env_bin(env: dict[str, Any]) -> str:
    """The tox env's bin directory (its interpreter's), where its commands resolve."""
    python = (env.get("python") or {}).get("executable") or ""
    return str(Path(python).parent) if python else ""


def _runs_pytest(argv: list[str]) -> bool:
    """``pytest …``, ``python -m pytest …``, ``coverage run -m pytest …`` (pycodestyle's tox.ini)."""
    if Path(argv[0]).name in ("pytest", "py.test"):
        return True
    return any(a == "-m" and b == "pytest" for a, b in itertools.pairwise(argv))


def _pytest_command(
    project: Project, runner: Runner, cwd: Path, bindir: str, argv: tuple[str, ...]
) -> Facts | None:
    """One pytest command of a tox env, run again in that env with JUnit XML (an INTERNALERROR:
    the Facts of _internal_error, with its ground_truth set)."""
    where = bindir or str(Path(argv[0]).parent)
    with tempfile.TemporaryDirectory(prefix="glreal-junit-") as tmp:
        xml = Path(tmp) / "report.xml"
        env = _truth_env(project, runner, tmp)
        env |= {
            "PATH": f"{where}:{os.environ.get('PATH', '')}",
            "PYTEST_ADDOPTS": shlex.join((f"--junitxml={xml}", *JUNIT)),
        }
        run(argv, cwd, env, runner.timeout)
        suite = _suite(xml)
        internal = _internal_error(project, runner, Path(tmp))
    if internal is not None:
        return replace(internal, counts=_session_counts(suite))
    if suite is None:
        return None
    failing = _failing(suite, cwd, project.root)
    kind, message = _failure_type(failing[0][1]) if failing else (None, None)
    return Facts(
        verdict="failed" if failing else "green", failing_ids=tuple(i for i, _ in failing),
        error_type=kind, message=message, counts=_counts(suite),
    )  # fmt: skip


# ---- Django's test runner with unittest-xml-reporting's XMLTestRunner ----


def xmlrunner_truth(
    project: Project, runner: Runner, done: Run, mutation: Mutation | None
) -> Facts:
    """The same command again; unittest-xml-reporting writes one JUnit file per test class (under
    the project's ``TEST_OUTPUT_DIR``): the files that run wrote are the report."""
    cwd = project.root / runner.cwd
    before = set(cwd.rglob("TEST-*.xml"))  # the captured run's files (one per class, timestamped)
    again = run(runner.argv, cwd, runner_env(project), runner.timeout)
    files = sorted(set(cwd.rglob("TEST-*.xml")) - before)
    how = f"second run: unittest-xml-reporting's {len(files)} TEST-*.xml files (exit {again.exit_code})"
    suites = [s for f in files if (s := _suite(f)) is not None]
    if done.timed_out or done.exit_code < 0 or not suites:
        return _startup_error(project, runner, done, mutation, how) or Facts(
            verdict=_no_report_verdict(done), ground_truth=how
        )
    failing = []
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for suite in suites:
        counts = {k: counts[k] + v for k, v in _counts(suite).items()}
        for case in suite.iter("testcase"):
            bad = case.find("failure") if case.find("failure") is not None else case.find("error")
            if bad is not None:
                failing.append((f"{case.get('classname')}.{case.get('name')}", bad))
    failing = _in_run_order(failing, done.stdout + done.stderr)
    facts: dict[str, Any] = dict(failing_ids=tuple(i for i, _ in failing), counts=counts)
    if failing:
        bad = failing[0][1]
        kind = bad.get("type", "").rsplit(".", 1)[-1] or None
        # the body is the printed traceback (attribute values lose their newlines)
        said = re.findall(rf"^(?:\w+\.)*{kind}: (.+)$", bad.text or "", re.M) if kind else []
        facts |= dict(
            error_type=kind, message=short(said[0] if said else bad.get("message", "")) or None,
            frame=frame_of(project, runner, mutation),
        )  # fmt: skip
    verdict = "green" if done.exit_code == 0 else "failed"
    return Facts(verdict=verdict, ground_truth=how, **facts)


def _startup_error(
    project: Project, runner: Runner, done: Run, mutation: Mutation | None, how: str
) -> Facts | None:
    """No report: the runner died at start-up on the project's own code (Django imports the
    settings, which import the package). A traceback ending in an error that is not a missing
    module is the code's failure."""
    lines = (done.stdout + done.stderr).rstrip().splitlines()
    m = re.match(r"^((?:\w+\.)*\w*(?:Error|Exception)): (.*)$", lines[-1]) if lines else None
    if done.exit_code == 0 or m is None or "No module named" in m.group(2):
        return None
    return Facts(
        verdict="failed", error_type=m.group(1).rsplit(".", 1)[-1], message=short(m.group(2)),
        frame=frame_of(project, runner, mutation),
        ground_truth=f"{how}; no report: the run's own traceback at start-up",
    )  # fmt: skip


# ---- unittest ----


def unittest_truth(project: Project, runner: Runner, done: Run, mutation: Mutation | None) -> Facts:
    """The same tests through unittest's own result API (scripts/conformance/unittest_truth.py)."""
    cwd = project.root / runner.cwd
    python = str(project.venv_path / "bin" / "python")
    # `make test` runs unittest inside its recipe: truth_argv says how
    argv = runner.truth_argv or runner.argv
    args = argv if isinstance(argv, tuple) else tuple(argv.split())
    names = _unittest_names(args)
    again = run(
        (python, str(UNITTEST_TRUTH), *names), cwd, run_env(project, runner), runner.timeout
    )
    how = f"unittest result API: python {UNITTEST_TRUTH.name} {' '.join(names)} (exit {again.exit_code})"
    if done.timed_out or done.exit_code < 0:
        return Facts(verdict=_no_report_verdict(done), ground_truth=how)
    report = json.loads(again.stdout.splitlines()[-1])
    failing = report["failing"]
    facts = dict(
        failing_ids=tuple(dict.fromkeys(f["id"] for f in failing)),
        counts=report["counts"],
        ground_truth=how,
    )
    if failing:
        first = failing[0]
        facts |= dict(
            error_type=first["type"],
            message=short(first["message"]),
            frame=frame_of(project, runner, mutation),
        )
    verdict = "green" if done.exit_code == 0 else "failed"
    if done.exit_code == 5 or report["ran"] == 0:  # unittest (3.12+): no tests ran
        verdict = "untrusted"
    return Facts(verdict=verdict, **facts)  # type: ignore[arg-type]


def _unittest_names(args: tuple[str, ...]) -> list[str]:
    """unittest_truth.py's arguments for ``python -m unittest [discover [-s S] [-p P] [-t T]] …``
    or, with no ``unittest`` in the command, a script that runs its own suite (``python tests.py``,
    jsonpatch's makefile): ``--script tests.py``."""
    if "unittest" not in args:
        script = next(a for a in args if a.endswith(".py"))
        return ["--script", script]
    rest = list(args[args.index("unittest") + 1 :])
    if rest[:1] != ["discover"]:
        return [a for a in rest if not a.startswith("-")]
    where = {"start": ".", "pattern": "test*.py", "top": ""}
    flags = {"-s": "start", "--start-directory": "start", "-p": "pattern", "--pattern": "pattern"}
    flags |= {"-t": "top", "--top-level-directory": "top"}
    positional = iter(("start", "pattern", "top"))
    words = iter(rest[1:])
    for word in words:
        if word in flags:
            where[flags[word]] = next(words)
        elif not word.startswith("-"):
            where[next(positional)] = word
    return ["--discover", where["start"], where["pattern"], where["top"]]


# ---- mypy, ruff ----


def mypy_truth(project: Project, runner: Runner, done: Run, mutation: Mutation | None) -> Facts:
    argv = with_args(runner.argv, "--output", "json")
    again = run(argv, project.root / runner.cwd, runner_env(project), runner.timeout)
    rows = [json.loads(ln) for ln in again.stdout.splitlines() if ln.startswith("{")]
    errors = [r for r in rows if r.get("severity") == "error"]
    how = (
        f"second run: {argv if isinstance(argv, str) else ' '.join(argv)} (exit {again.exit_code})"
    )
    return _lint_facts(done, errors, how, code="code", file="file", line=lambda r: r["line"])


def ruff_truth(project: Project, runner: Runner, done: Run, mutation: Mutation | None) -> Facts:
    argv = with_args(runner.argv, "--output-format", "json")
    again = run(argv, project.root / runner.cwd, runner_env(project), runner.timeout)
    rows = json.loads(again.stdout or "[]")
    root = str(project.root / runner.cwd) + "/"
    for r in rows:
        r["filename"] = r["filename"].removeprefix(root)
        r["code"] = r.get("code") or "invalid-syntax"
    how = (
        f"second run: {argv if isinstance(argv, str) else ' '.join(argv)} (exit {again.exit_code})"
    )
    return _lint_facts(
        done, rows, how, code="code", file="filename", line=lambda r: r["location"]["row"]
    )


def _lint_facts(done: Run, rows: list[dict], how: str, *, code: str, file: str, line) -> Facts:  # type: ignore[no-untyped-def, type-arg]
    if done.timed_out or done.exit_code < 0:
        return Facts(verdict=_no_report_verdict(done), ground_truth=how)
    if not rows:
        verdict = "green" if done.exit_code == 0 else "env_failure"
        return Facts(verdict=verdict, counts={"failed": 0}, ground_truth=how)
    first = rows[0]
    return Facts(
        verdict="failed",
        failing_ids=tuple(dict.fromkeys(r[code] or "error" for r in rows)),
        error_type=first[code],
        message=short(first["message"]),
        frame=f"{first[file]}:{line(first)}",
        counts={"failed": len(rows)},
        ground_truth=how,
    )


# ---- peers: other tools' digests of the same mutant, captured for bench/digest.py ----


def receptor_run(project: Project, runner: Runner) -> dict[str, Any]:
    """pytest-receptor's ``--receptor=llm`` output, from its own venv (the project + the plugin)."""
    peer = replace(
        project,
        venv=f"{project.venv}-receptor",
        install=(*project.install, "{venv}/bin/pip install -q pytest-receptor"),
    )
    install(peer)
    argv = with_args(runner.argv, "--receptor=llm")
    env = runner_env(peer)
    done = run(argv, project.root / runner.cwd, env, runner.timeout)
    code = "import importlib.metadata as m; print('pytest-receptor', m.version('pytest-receptor'))"
    version = run((str(peer.venv_path / "bin" / "python"), "-c", code), project.root, env, 60)
    return {
        "argv": argv if isinstance(argv, str) else list(argv),
        "exit_code": done.exit_code,
        "stdout": cap(done.stdout),
        "stderr": cap(done.stderr),
        "version": version.stdout.strip(),
    }


PEERS = {"pytest": {"pytest-receptor": receptor_run}}

TRUTHS = {
    "junitxml": pytest_truth,
    "unittest-api": unittest_truth,
    "tox-pytest": tox_truth,
    "nox-pytest": nox_truth,
    "django-xmlrunner": xmlrunner_truth,
    "mypy-json": mypy_truth,
    "ruff-json": ruff_truth,
}

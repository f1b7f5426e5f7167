"""Ground truth for the Node runners: each reads the report of the second, structured run.

jest/vitest ``--json``, mocha ``--reporter json``, node's junit reporter, ava/tap TAP,
tsc ``--pretty false``, eslint ``--format json``; uvu has no reporter, so its fixed
``FAIL  suite  "test"`` headers are read and each test file is run again on its own.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from truth import Truth, error_in, make_truth, split_error, strip_ansi, tap_failures, yaml_field


def read_jest(report: str, *, joiner: str = " › ", root: Path) -> Truth:
    """``jest --json`` / ``vitest --reporter=json`` (the same shape)."""
    data = json.loads(report)
    ids: list[str] = []
    messages: list[str] = []
    for suite in data.get("testResults", []):
        failed = [a for a in suite.get("assertionResults", []) if a.get("status") == "failed"]
        for result in failed:
            ids.append(joiner.join([*result.get("ancestorTitles", []), result["title"]]))
            messages.append("\n".join(result.get("failureMessages") or []))
        if not failed and suite.get("status") == "failed":  # the file itself failed to load
            ids.append(_relative(suite.get("name", ""), root))
            messages.append(suite.get("message", ""))
    error_type, message = _first_error(messages)
    if message:  # jest's matcher hint comment ("// Object.is equality") is not the message
        message = re.sub(r"\s+// [\w. ]+$", "", message)
    skipped = data.get("numPendingTests", 0) + data.get("numTodoTests", 0)
    return Truth(
        ids=tuple(ids),
        error_type=error_type,
        message=message,
        passed=data.get("numPassedTests"),
        failed=len(ids),
        skipped=skipped,
        source="json report",
    )


_TS_DIAG = re.compile(r"error (TS\d+): (.+)$", re.M)
# mocha: " Exception during run: SyntaxError[ @/…/tests/x.js ]: missing ) after argument list"
_MOCHA_CRASH = re.compile(r"Exception during run: (\w+)(?:\[ @[^\]]*\])?: (.+)$", re.M)


def _first_error(messages: list[str]) -> tuple[str | None, str | None]:
    if not messages:
        return None, None
    text = strip_ansi(messages[0])
    ts = _TS_DIAG.search(text)  # ts-jest: a type/syntax error in the code under test
    if ts and "Test suite failed to run" in text:
        return ts[1], ts[2].strip()
    error_type, message = error_in(text)
    return (error_type, message) if error_type else split_error(_drop_header(text))


def _drop_header(text: str) -> str:
    """vitest/jest suite messages start with a blank or a path line; keep the error."""
    lines = [ln for ln in strip_ansi(text).splitlines() if ln.strip() and not ln.strip().startswith("●")]
    return "\n".join(lines)


def _relative(path: str, root: Path) -> str:
    prefix = str(root) + "/"
    return path[len(prefix) :] if path.startswith(prefix) else path


def read_mocha(report: str, *, root: Path, source: str = "mocha --reporter json") -> Truth:
    """``mocha --reporter json``: each JSON object on stdout (one per npm workspace), summed."""
    reports = _mocha_reports(report)
    if not reports:
        return Truth(source=f"{source} (no report: the run stopped before mocha ran)")
    failures = [f for data in reports for f in data.get("failures", [])]
    ids = tuple(f["fullTitle"] for f in failures)
    error_type, message = (None, None)
    if failures:
        err = failures[0].get("err", {})
        error_type, message = split_error(err.get("stack") or err.get("message", ""))
        message = split_error(err.get("message", ""))[1] or message
    elif crash := _MOCHA_CRASH.search(strip_ansi(report)):  # a test file failed to load
        error_type, message = crash[1], crash[2].strip()
    elif ts := _TS_DIAG.search(strip_ansi(report)):  # a workspace's pretest build (tsc) failed
        error_type, message = ts[1], ts[2].strip()
    stats = [data["stats"] for data in reports]
    # a workspace whose tests never ran: each test file that failed to load, each tsc error of
    # its pretest build, counts as one failure (as jest's "Test suite failed to run")
    unrun = len(_MOCHA_CRASH.findall(strip_ansi(report))) + len(_TS_DIAG.findall(strip_ansi(report)))
    return Truth(
        ids=ids,
        error_type=error_type,
        message=message,
        passed=sum(s.get("passes", 0) for s in stats),
        failed=sum(s.get("failures", 0) for s in stats) + unrun,
        skipped=sum(s.get("pending", 0) for s in stats),
        source=source,
    )


def _mocha_reports(report: str) -> list[dict[str, Any]]:
    """Every ``{"stats": …}`` object in the text (npm's banners between them), in order."""
    found, at = [], report.find('{\n  "stats"')
    while at >= 0:
        data, length = json.JSONDecoder().raw_decode(report[at:])
        found.append(data)
        at = report.find('{\n  "stats"', at + length)
    return found


def read_node_junit(report: str, *, root: Path) -> Truth:
    """node's ``--test-reporter=junit`` XML."""
    tree = ET.fromstring(report)
    ids: list[str] = []
    bodies: list[str] = []
    passed = skipped = 0
    for case in tree.iter("testcase"):
        failure = case.find("failure")
        if failure is not None:
            ids.append(_relative(case.get("name", ""), root))
            bodies.append((failure.text or "") + "\n" + failure.get("message", ""))
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
    error_type, message = _node_error(bodies[0]) if bodies else (None, None)
    return Truth(
        ids=tuple(ids),
        error_type=error_type,
        message=message,
        passed=passed,
        failed=len(ids),
        skipped=skipped,
        source="node --test-reporter=junit",
    )


_NODE_CAUSE = re.compile(r"cause: ((?:[A-Z]\w*)?(?:Error|Exception))(?: \[\w+\])?: ([^\n]+)")
_NODE_WRAPPED = re.compile(r"\[?Error \[ERR_TEST_FAILURE\]: ([^\n]+?)\]?\s*(?:\{|$)", re.M)


def _node_error(body: str) -> tuple[str | None, str | None]:
    """The cause under node's ``[Error [ERR_TEST_FAILURE]: ...]`` wrapper.

    A file that failed to load says only ``cause: 'test failed'``: no error here (None, None).
    """
    text = strip_ansi(body)
    cause = _NODE_CAUSE.search(text)
    if cause:
        return cause[1], cause[2].strip()
    for line in text.splitlines():
        if "ERR_TEST_FAILURE" not in line:
            found = split_error(line) if re.match(r"^\s*(?:[A-Z]\w*)?(?:Error|Exception)\b", line) else None
            if found and found[0]:
                return found
    wrapped = _NODE_WRAPPED.search(text)
    if wrapped and wrapped[1] != "test failed":
        return "Error", wrapped[1].strip()
    return None, None


def read_tap(report: str, *, root: Path, source: str) -> Truth:
    """ava ``--tap`` / tap ``-R tap``: the leaf ``not ok`` points and their YAML blocks."""
    failures, tally = tap_failures(report)
    if source.startswith("ava"):  # "<file> exited with a non-zero exit code" follows the real error
        exits = [f for f in failures if re.search(r" exited with a non-zero exit code: \d+$", f[0])]
        if exits and len(exits) < len(failures):
            failures = [f for f in failures if f not in exits]
            tally["fail"] -= len(exits)
    error_type = message = None
    if failures:
        yaml = failures[0][1]
        error_type = yaml_field(yaml, "name") or yaml_field(yaml, "type")
        message = yaml_field(yaml, "message") or _details_key(yaml)
        if error_type and not re.match(r"^[A-Z]\w*$", error_type):
            error_type = None
    return Truth(
        ids=tuple(_relative(title, root) for title, _ in failures),
        error_type=error_type,
        message=message,
        passed=tally["pass"],
        failed=tally["fail"],
        skipped=tally["skip"],
        source=source,
    )


def _details_key(yaml: str) -> str | None:
    """ava's assertion without a message: its ``details`` key (``Difference (- actual, + expected):``)."""
    match = re.search(r"^\s*details:\n\s*('(?:[^']|'')*'|[^:\n]+):", yaml, re.M)
    return match[1].strip("'").replace("''", "'") if match else None


_UVU_FAIL = re.compile(r'^\s*FAIL\s+(?:(.+?)\s+)?"(.+)"\s*$')
_UVU_TOTAL = re.compile(r"^\s*(Total|Passed|Skipped):\s+(\d+)")


def read_uvu(report: str, *, root: Path) -> Truth:
    """uvu prints ``FAIL  <suite>  "<test>"`` then the assertion, then a Total/Passed summary."""
    lines = strip_ansi(report).splitlines()
    ids: list[str] = []
    first_body: list[str] = []
    totals: dict[str, int] = {}
    for index, line in enumerate(lines):
        match = _UVU_FAIL.match(line)
        if match:
            ids.append(f"{match[1]} > {match[2]}" if match[1] else match[2])
            if len(ids) == 1:
                first_body = lines[index + 1 : index + 8]
        total = _UVU_TOTAL.match(line)
        if total:
            totals[total[1]] = int(total[2])
    error_type, message = _uvu_error(first_body) if ids else error_in(report)
    passed = totals.get("Passed")
    total = totals.get("Total")
    failed = (total - (passed or 0) - totals.get("Skipped", 0)) if total is not None else None
    return Truth(
        ids=tuple(ids),
        error_type=error_type,
        message=message,
        passed=passed,
        failed=failed,
        skipped=totals.get("Skipped"),
        source="uvu text (FAIL headers and Total/Passed), with a run per test file",
    )


def _uvu_error(body: list[str]) -> tuple[str | None, str | None]:
    """The line under the header: ``~> message  (is)`` or ``Expected ...:  (is)``."""
    for line in body:
        match = re.match(r"^\s*(?:~> )?(.+?)\s+\(([^()]+)\)\s*$", line)
        if match:
            return "Assertion", match[1]
        if line.strip():
            return split_error(line)
    return None, None


_TSC = re.compile(r"^(.+?)\((\d+),(\d+)\): error (TS\d+): (.*)$")


JASMINE_MARK = "JASMINE-JSON-REPORT "
# eslint's stylish line: "  219:25  error  Unexpected negated condition  no-negated-condition"
_ESLINT_LINE = re.compile(r"^\s+\d+:\d+\s+error\s+(?P<message>.+?)(?:\s{2,}[\w@/-]+)?$", re.M)


def read_jasmine(report: str, *, root: Path) -> Truth:
    """jasmine's reporter API as JSON (``jasmine_json_reporter.cjs``): specs, suite and global errors."""
    line = next((ln for ln in report.splitlines() if ln.startswith(JASMINE_MARK)), None)
    if line is None:  # jasmine never ran (the build's eslint failed) or crashed: no counts
        lint = _ESLINT_LINE.search(strip_ansi(report))
        message = lint["message"] if lint else None
        return Truth(message=message, source="jasmine reporter (no report: the run stopped)")
    data = json.loads(line[len(JASMINE_MARK) :])
    specs = data["specs"]
    failed = [s for s in specs if s["status"] == "failed"]
    # afterAll errors and files that failed to load (jasmine's suite and global failures)
    extra = [*data["suites"], {"fullName": "", "failedExpectations": data["failedExpectations"]}]
    failures = [*failed, *(x for x in extra if x["failedExpectations"])]
    messages = [f["failedExpectations"][0]["message"] for f in failures if f["failedExpectations"]]
    error_type, message = split_error(messages[0]) if messages else (None, None)
    return Truth(
        ids=tuple(s["fullName"] for s in failed),
        error_type=error_type,
        message=message,
        passed=sum(s["status"] == "passed" for s in specs),
        failed=len(failures),
        skipped=sum(s["status"] == "pending" for s in specs),
        source="jasmine reporter (specDone, suiteDone, jasmineDone)",
    )


def read_tsc(report: str, *, root: Path) -> Truth:
    """``tsc --pretty false``: one ``file(line,col): error TSnnnn: message`` line per error."""
    errors = [m for m in map(_TSC.match, strip_ansi(report).splitlines()) if m]
    return Truth(
        ids=tuple(m[4] for m in errors),
        error_type=errors[0][4] if errors else None,
        message=errors[0][5] if errors else None,
        failed=len(errors),
        source="tsc --pretty false",
    )



def read_eslint(report: str, *, root: Path) -> Truth:
    """``eslint --format json``: errors and warnings per file."""
    data = _json_array(report)
    problems = [m for f in data for m in f.get("messages", [])]
    ids = [m.get("ruleId") or ("parsing" if m.get("fatal") else "") for m in problems]
    first = problems[0] if problems else {}
    return Truth(
        ids=tuple(ids),
        error_type=ids[0] if ids else None,
        message=first.get("message"),
        failed=len(problems),
        source="eslint --format json",
    )


def _json_array(report: str) -> list[dict[str, Any]]:
    """The JSON array eslint prints (npm's banner before it, warnings after it)."""
    start = report.find("[{")
    start = report.find("[]") if start < 0 else start
    data, _ = json.JSONDecoder().raw_decode(report[start:])
    return list(data)


_TAPE_POINT = re.compile(r"^(ok|not ok) \d+ (.*?)(\s+# (?:SKIP|TODO)\b.*)?$")


def read_tape(report: str, *, root: Path) -> Truth:
    """tape's flat TAP 13: a test is its ``# <name>`` comment, its assertions the points under it
    (``not ok 5 should be deeply equivalent``, no ``-``); its summary counts assertions. An
    uncaught exception ends the process mid-test: no summary, the test running is the failure."""
    lines = strip_ansi(report).splitlines()
    test, ids = "", []
    tally = {"pass": 0, "fail": 0, "skip": 0}
    for line in lines:
        if line.startswith("# ") and not re.match(r"^# (?:tests|pass|fail|skip|todo|ok)\b", line):
            test = line[2:].strip()
            continue
        match = _TAPE_POINT.match(line)
        if not match:
            continue
        tally["skip" if match[3] else "pass" if match[1] == "ok" else "fail"] += 1
        if match[1] == "not ok" and test not in ids:
            ids.append(test)
    if not any(re.match(r"^# tests \d+$", line) for line in lines):  # the process died
        # node prints an error without a stack as `[SyntaxError: message]`
        crash = [m for line in lines if (m := re.match(r"^\[?([A-Z]\w*(?:Error|Exception)): (.*?)\]?$", line))]
        died = [test] if test and crash and test not in ids else []
        source = "tape (TAP 13; the process died before its summary)"
        if ids:  # a failing assertion came first
            return Truth(ids=(*ids, *died), message=_tape_message(lines), source=source)
        return Truth(
            ids=tuple(died),
            error_type=crash[-1][1] if crash else None,  # node's uncaught exception, the last
            message=crash[-1][2] if crash else None,
            source=source,
        )
    return Truth(
        ids=tuple(ids),
        error_type=None,  # tape names the assertion (operator: deepEqual), not an error class
        message=_tape_message(lines),
        passed=tally["pass"],
        failed=tally["fail"],
        skipped=tally["skip"],
        source="tape (TAP 13, assertions as points)",
    )


def _tape_message(lines: list[str]) -> str | None:
    """The first failing assertion's own name (``should be deeply equivalent``)."""
    point = next((line for line in lines if line.startswith("not ok ")), "")
    match = _TAPE_POINT.match(point)
    return match[2].strip() if match else None


TRUTHS = {
    "jest": make_truth(read_jest),
    "vitest": make_truth(lambda report, root: read_jest(report, joiner=" > ", root=root)),
    "mocha": make_truth(read_mocha),
    "mocha-workspaces": make_truth(
        lambda report, root: read_mocha(report, root=root, source="mocha --reporter json per npm workspace")
    ),
    "node-junit": make_truth(read_node_junit),
    "node-junit-file": make_truth(read_node_junit, counts_only_if="# tests "),
    "ava-tap": make_truth(lambda report, root: read_tap(report, root=root, source="ava --tap")),
    "tap-tap": make_truth(lambda report, root: read_tap(report, root=root, source="tap -R tap")),
    "tape": make_truth(read_tape),
    "uvu": make_truth(read_uvu),
    "jasmine": make_truth(read_jasmine),
    "tsc": make_truth(read_tsc),
    "eslint": make_truth(read_eslint),
}

#!/usr/bin/env python3
"""Capture the real-project cases of the verdict fixes (issue 10) into tests/resources/real/.

Each case checks out a public repository (fetched into /work/.mirror/<owner>+<name>/repo by the
search tool, or GLREAL_MIRROR) at a pinned commit under /tmp/glreal-verdicts/<project>, applies an
optional one-line mutation (committed, so no diff points at it), runs the runner exactly as its
maintainers do, and records the output with facts taken from the runner's OWN structured report
(``go test -json`` actions, ``mocha --reporter json``, node's junit reporter): never from
greenloop's parsers. Same case.json keys as tests/resources/outputs (see its README).

    python3 scripts/capture_verdict_cases.py [--only NAME]

Stdlib only. Outputs are committed; the projects' code never is.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

REPO = Path(__file__).resolve().parents[1]
REAL = REPO / "tests" / "resources" / "real"
WORK = Path(os.environ.get("GLREAL_VERDICTS", "/tmp/glreal-verdicts"))
MIRROR = Path(os.environ.get("GLREAL_MIRROR", "/work/.mirror"))
FORCED_ENV = {
    "NO_COLOR": "1",
    "PAGER": "cat",
    "LANG": "C.UTF-8",
    "GOPROXY": "off",
    "GOTOOLCHAIN": "local",
    "GOFLAGS": "",
    "npm_config_update_notifier": "false",
}
DROPPED_ENV = ("CI", "FORCE_COLOR", "NODE_OPTIONS", "COLUMNS", "GITHUB_ACTIONS", "LC_ALL")
Truth = Callable[[Path, dict[str, str], str], dict[str, Any]]
"""(checkout, environment, the captured stdout) -> facts."""


@dataclass
class Case:
    tool: str
    name: str
    repo: str
    commit: str
    argv: list[str]
    truth: Truth
    ground_truth: str
    mutation: dict[str, Any] | None = None
    version: list[str] = field(default_factory=list)
    unverified: list[str] = field(default_factory=list)
    install: list[str] = field(default_factory=list)
    """Run once in the checkout when it has no node_modules (npm's registry is reachable)."""
    repo_files: list[str] = field(default_factory=list)
    """Checkout files the classifier reads (package.json), stored for the replay: not code."""
    to_files: bool = False
    """Output into files, not pipes: node drops what a pipe has not taken when the program calls
    process.exit (tsd's 1 MB report reached a pipe whole in 1 run of 2 here). Stored without the
    padding that closes a line (see run_to_files)."""


def run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, errors="replace",
        stdin=subprocess.DEVNULL, timeout=600, check=False,
    )  # fmt: skip


def run_to_files(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    out, err = cwd / ".capture-stdout", cwd / ".capture-stderr"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        code = subprocess.run(
            argv, cwd=cwd, env=env, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL,
            timeout=600, check=False,
        ).returncode  # fmt: skip
    # eslint-formatter-pretty pads every row to ~500 columns: stored as greenloop reads it, without
    # a line's closing 16+ spaces (process_capture._PADDING), 150 KB instead of 1.5 MB
    texts = [re.sub(r"[ \t]{16,}(?=\r?\n)", "", p.read_text(errors="replace")) for p in (out, err)]
    out.unlink()
    err.unlink()
    return subprocess.CompletedProcess(argv, code, texts[0], texts[1])


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in DROPPED_ENV}
    return env | FORCED_ENV


def checkout(case: Case, env: dict[str, str]) -> Path:
    project = case.repo.split("/")[1]
    dest = WORK / project
    if not dest.exists():
        source = MIRROR / case.repo.replace("/", "+") / "repo"
        subprocess.run(["git", "clone", "-q", str(source), str(dest)], check=True)
    subprocess.run(["git", "checkout", "-q", "-f", case.commit], cwd=dest, check=True)
    subprocess.run(["git", "clean", "-qfdx", "-e", "node_modules"], cwd=dest, check=True)
    if case.install and not (dest / "node_modules").exists():
        subprocess.run(case.install, cwd=dest, env=env, check=True)
    if case.mutation:
        mutate(dest, case.mutation, env)
    return dest


def mutate(root: Path, mutation: dict[str, Any], env: dict[str, str]) -> None:
    path = root / mutation["file"]
    lines = path.read_text().split("\n")
    index = mutation["line"] - 1
    if mutation["before"] not in lines[index]:
        raise SystemExit(f"mutation site moved: {mutation}")
    lines[index] = lines[index].replace(mutation["before"], mutation["after"], 1)
    path.write_text("\n".join(lines))
    git = ["git", "-c", "user.name=corpus", "-c", "user.email=corpus@example.invalid"]
    git += ["-c", "core.hooksPath=/dev/null"]  # the project's husky hooks must not run on it
    subprocess.run([*git, "commit", "-qam", "change"], cwd=root, env=env, check=True)


def go_json_truth(argv: list[str]) -> Truth:
    """Facts from ``go test -json``'s own pass/fail/skip actions of the leaf tests.

    A test that ran subtests is not counted (as scripts/conformance/native.py): it passes or fails
    with them.
    """

    def truth(root: Path, env: dict[str, str], captured: str) -> dict[str, Any]:
        json_run = "-json" in argv  # the captured run is the structured report itself
        out = captured if json_run else run([*argv[:2], "-json", *argv[2:]], root, env).stdout
        events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        actions = {
            (e["Package"], e["Test"]): e["Action"]
            for e in events
            if e.get("Test") and e.get("Action") in ("pass", "fail", "skip")
        }
        parents = {(pkg, test.rpartition("/")[0]) for pkg, test in actions if "/" in test}
        actions = {key: action for key, action in actions.items() if key not in parents}
        failing = [test for (_, test), action in actions.items() if action == "fail"]
        counts = {a: sum(1 for v in actions.values() if v == a) for a in ("pass", "fail", "skip")}
        facts: dict[str, Any] = {
            "verdict": "failed" if failing else "green",
            "failing_ids": failing,
            "counts": {"passed": counts["pass"], "failed": counts["fail"], "skipped": counts["skip"]},
        }
        return facts | _go_first_message(root, events, failing)

    return truth


def _go_first_message(root: Path, events: list[dict[str, Any]], failing: list[str]) -> dict[str, Any]:
    """The first failing test's first ``file_test.go:N: message`` output line, as frame + message."""
    module = (root / "go.mod").read_text().split()[1]
    for event in events:
        output = str(event.get("Output", ""))
        if event.get("Test") in failing and _GO_MSG.match(output):
            m = _GO_MSG.match(output)
            assert m is not None
            folder = event["Package"].removeprefix(module).strip("/")
            frame = f"{folder}/{m['file']}" if folder else m["file"]
            return {"frame": f"{frame}:{m['line']}", "message": m["msg"].strip()}
    return {}


_GO_MSG = re.compile(r"^\s+(?P<file>\w+_test\.go):(?P<line>\d+): (?P<msg>.+)")


def node_junit_truth(argv: list[str], declared: dict[str, Any]) -> Truth:
    """Facts from node's junit reporter (a second run); the mutation site is the frame."""

    def truth(root: Path, env: dict[str, str], captured: str) -> dict[str, Any]:
        report = root / "junit.xml"
        flags = ["--test-reporter=junit", f"--test-reporter-destination={report}"]
        run([argv[0], *flags, *argv[1:]], root, env)
        cases = ElementTree.parse(report).getroot().iter("testcase")
        verdicts = {c.get("name", ""): _junit_outcome(c) for c in cases}
        failing = [_relative(name, root) for name, v in verdicts.items() if v == "failed"]
        counts = {v: sum(1 for x in verdicts.values() if x == v) for v in ("passed", "failed")}
        skipped = sum(1 for x in verdicts.values() if x == "skipped")
        report.unlink()
        return {
            "verdict": "failed" if failing else "green",
            "failing_ids": failing,
            "counts": counts | {"skipped": skipped},
        } | declared

    return truth


TSD_VERSION = [
    "node", "-p", "JSON.parse(require('fs').readFileSync('node_modules/tsd/package.json')).version"
]  # fmt: skip


def xo_json_truth() -> Truth:
    """Facts from xo's own JSON reporter (eslint's result objects): rules, first location."""

    def truth(root: Path, env: dict[str, str], captured: str) -> dict[str, Any]:
        results = json.loads(run(["npx", "xo", "--reporter=json"], root, env).stdout)
        found = [(r["filePath"], m) for r in results for m in r["messages"] if m["severity"] == 2]
        first_file, first = found[0] if found else ("", {})
        return {
            "verdict": "failed" if found else "green",
            "failing_ids": [m["ruleId"] for _, m in found],
            "frame": f"{_relative(first_file, root)}:{first['line']}" if found else None,
            "message": first.get("message"),
            "errors": len(found),
        }

    return truth


def tsd_api_truth(verdict: str) -> Truth:
    """Facts from tsd's own API (its diagnostics); messages as its formatter prints them, without
    the quotes around type names. ``verdict`` is what they amount to (env_failure: all inside
    node_modules)."""
    script = (
        "require('tsd').default().then(d => console.log(JSON.stringify(d.map(x => "
        "({file: x.fileName, line: x.line, message: x.message, severity: x.severity})))))"
    )

    def truth(root: Path, env: dict[str, str], captured: str) -> dict[str, Any]:
        diagnostics = json.loads(run(["node", "-e", script], root, env).stdout)
        errors = [d for d in diagnostics if d["severity"] == "error"]
        own = [d for d in errors if "node_modules/" not in _relative(d["file"], root)]
        first = own[0] if own else None  # none: what is wrong is no line of the repository's
        return {
            "verdict": verdict,
            "failing_ids": [],
            "frame": f"{_relative(first['file'], root)}:{first['line']}" if first else None,
            "message": first["message"].replace("'", "") if first else None,
            "errors": len(errors),
            "errors_in_node_modules": len(errors) - len(own),
        }

    return truth


def go_report_truth(argv: list[str]) -> Truth:
    """``go_json_truth`` plus what the failing tests printed in ``go test -json``'s output events:
    a failed example's ``got:`` / ``want:`` lines, and the first failing test's data race reports
    (each access's repository frames, innermost first)."""
    counted = go_json_truth(argv)

    def truth(root: Path, env: dict[str, str], captured: str) -> dict[str, Any]:
        facts = counted(root, env, captured)
        out = run([*argv[:2], "-json", *argv[2:]], root, env).stdout
        printed: dict[str, list[str]] = {}
        for line in out.splitlines():
            event = json.loads(line) if line.startswith("{") else {}
            if event.get("Test") in facts["failing_ids"] and event.get("Action") == "output":
                printed.setdefault(event["Test"], []).append(event["Output"].rstrip("\n"))
        examples = {t: _example_output(lines) for t, lines in printed.items() if "got:" in lines}
        first = printed.get(facts["failing_ids"][0], []) if facts["failing_ids"] else []
        races = _race_accesses(first, root)
        return (
            facts
            | ({"examples": examples} if examples else {})
            | ({"error_type": "DATA RACE", "race_accesses": races} if races else {})
        )

    return truth


def _example_output(lines: list[str]) -> dict[str, list[str]]:
    got, want = lines.index("got:"), lines.index("want:")
    return {"got": lines[got + 1 : want], "want": lines[want + 1 :]}


def _race_accesses(lines: list[str], root: Path) -> list[dict[str, Any]]:
    """The first ``WARNING: DATA RACE`` report: ``Write at 0x.. by goroutine 7:`` and the stack
    under it, up to the blank line, as repository-relative file:line."""
    start = lines.index("WARNING: DATA RACE") if "WARNING: DATA RACE" in lines else len(lines)
    accesses: list[dict[str, Any]] = []
    for line in lines[start + 1 :]:
        if line.startswith("=================="):
            break
        if m := re.match(r"^(\w[\w ]*?) at 0x[0-9a-f]+ by (.+):$", line):
            accesses.append({"access": f"{m[1]} by {m[2]}", "frames": []})
        elif line.startswith("Goroutine "):
            accesses.append({"access": "", "frames": []})  # where goroutines began: not an access
        elif (m := re.match(r"^\s+(\S+\.go):(\d+) \+0x", line)) and m[1].startswith(f"{root}/"):
            accesses[-1]["frames"].append(f"{_relative(m[1], root)}:{m[2]}")
    return [a for a in accesses if a["access"]]


def libtest_json_truth(targets: tuple[str, ...] = ()) -> Truth:
    """Facts from libtest's own JSON events (``--format json``, unstable: RUSTC_BOOTSTRAP=1 on a
    stable toolchain, a second run): ids, counts, and each failing test's panic that ended it (the
    last of its own thread's panics; the earlier ones its test caught)."""

    def truth(root: Path, env: dict[str, str], captured: str) -> dict[str, Any]:
        argv = ["cargo", "test", *targets, "-q", "--", "-Z", "unstable-options", "--format", "json"]
        out = run(argv, root, env | {"RUSTC_BOOTSTRAP": "1"}).stdout
        events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        tests = [e for e in events if e.get("type") == "test" and e.get("event") != "started"]
        failed = [e for e in tests if e["event"] == "failed"]
        counts = {k: sum(1 for e in tests if e["event"] == k) for k in ("ok", "failed", "ignored")}
        return {
            "verdict": "failed" if failed else "green",
            "failing_ids": [e["name"] for e in failed],
            "counts": {"passed": counts["ok"], "failed": counts["failed"], "skipped": counts["ignored"]},
            "ending_panics": {e["name"]: _ending_panic(e["name"], e.get("stdout", "")) for e in failed},
        }

    return truth


def _ending_panic(name: str, stdout: str) -> str:
    """``file:line message`` of the test thread's last panic."""
    found = re.findall(rf"^thread '{re.escape(name)}'(?: \(\d+\))? panicked at (\S+?):\d+:\n(.*)$", stdout, re.M)
    return f"{found[-1][0]} {found[-1][1]}" if found else ""


def clippy_json_truth(argv: list[str]) -> Truth:
    """Facts from cargo's JSON messages (``--message-format=json``, a second run): each error
    diagnostic's code and primary span, in order."""

    def truth(root: Path, env: dict[str, str], captured: str) -> dict[str, Any]:
        out = run([*argv[:2], "--message-format=json", *argv[2:]], root, env).stdout
        found = []
        for line in out.splitlines():
            event = json.loads(line) if line.startswith("{") else {}
            message = event.get("message") or {}
            span = next((s for s in message.get("spans", []) if s["is_primary"]), None)
            if event.get("reason") == "compiler-message" and message["level"] == "error" and span:
                code = (message.get("code") or {}).get("code", "")
                found.append(f"{span['file_name']}:{span['line_start']} {code}")
        return {"verdict": "failed" if found else "green", "failing_ids": [], "diagnostics": found}

    return truth


def vitest_unbuilt_truth() -> Truth:
    """vitest's JSON report (a second run): every failure is an import of the package itself
    (package.json's name) that cannot resolve, and the files its exports name are not there:
    the build has not run, an environment failure."""

    def truth(root: Path, env: dict[str, str], captured: str) -> dict[str, Any]:
        out = root / ".vitest-report.json"
        run(["npx", "vitest", "run", "--reporter=json", f"--outputFile={out}"], root, env)
        report = json.loads(out.read_text())
        out.unlink()
        manifest = json.loads((root / "package.json").read_text())
        name = manifest["name"]
        messages = [m for f in report["testResults"] for m in [f.get("message", "")] if m]
        messages += [m for f in report["testResults"] for t in f["assertionResults"] for m in t["failureMessages"]]
        own = re.compile(rf"(?:Cannot find package '|Could not resolve \"){re.escape(name)}[/'\"]")
        exported = re.findall(r'"(\./dist/[^"*]+)"', json.dumps(manifest.get("exports")))
        unbuilt = all(own.search(m) for m in messages) and not any((root / e).exists() for e in exported)
        ids, passed = [], 0  # as scripts/conformance/node.py: a suite that failed to load is one
        for suite in report["testResults"]:
            failed = [t for t in suite["assertionResults"] if t["status"] == "failed"]
            passed += sum(t["status"] == "passed" for t in suite["assertionResults"])
            ids += [" > ".join([*t["ancestorTitles"], t["title"]]) for t in failed]
            ids += [_relative(suite["name"], root)] if suite["status"] == "failed" and not failed else []
        return {
            "verdict": "env_failure" if messages and unbuilt else "failed",
            "failing_ids": ids,
            "counts": {"passed": passed, "failed": len(ids), "skipped": 0},
            "unresolved": sorted(set(re.findall(rf"['\"]({re.escape(name)}/[\w/-]+)['\"]", "\n".join(messages)))),
        }

    return truth


def jest_json_truth(argv: list[str]) -> Truth:
    """``jest --json`` (a second run): ids, counts, and the snapshot keys no test checked
    (``snapshot.uncheckedKeysByFile``: obsolete, the run fails on them)."""

    def truth(root: Path, env: dict[str, str], captured: str) -> dict[str, Any]:
        out = root / ".jest-report.json"
        run([*argv, "--json", f"--outputFile={out}"], root, env)
        report = json.loads(out.read_text())
        out.unlink()
        ids, ts = [], None  # a suite that failed to run (ts-jest's type error) is one, as node.py
        shown = strip_ansi(captured)  # suites run in parallel: first as the captured run printed them
        order = sorted(report["testResults"], key=lambda r: shown.find(_relative(r["name"], root)))
        for suite in order:
            failed = [t for t in suite["assertionResults"] if t["status"] == "failed"]
            ids += [" › ".join([*t["ancestorTitles"], t["title"]]) for t in failed]
            if suite["status"] == "failed" and not failed:
                ids.append(_relative(suite["name"], root))
                ts = ts or re.search(r"(\S+):(\d+):\d+ - error (TS\d+): (.*)", strip_ansi(suite["message"]))
        unchecked = report["snapshot"]["uncheckedKeysByFile"]
        facts = {"error_type": ts[3], "message": ts[4], "frame": f"{ts[1]}:{ts[2]}"} if ts else {}
        return facts | {
            "verdict": "green" if report["success"] else "failed",
            "failing_ids": ids,
            "counts": {
                "passed": report["numPassedTests"],
                "failed": len(ids),
                "skipped": report["numPendingTests"] + report["numTodoTests"],
            },
            "obsolete": {_relative(u["filePath"], root): u["keys"] for u in unchecked},
        }

    return truth


def eslint_crash_truth() -> Truth:
    """ESLint's own verdict on a crash: no JSON report at all from ``--format json`` (a second run),
    exit 2 (its documented 'configuration problem or internal error', never lint findings); the
    location and error node printed for the exception (file:line header, then Type: message)."""

    def truth(root: Path, env: dict[str, str], captured: str) -> dict[str, Any]:
        proc = run(["npx", "eslint", "--format", "json", "."], root, env)
        header = re.search(r"^(?P<file>/\S+):(?P<line>\d+)$", proc.stderr + proc.stdout, re.M)
        error = re.search(r"^(?P<type>\w*Error): (?P<msg>.+)$", proc.stderr + proc.stdout, re.M)
        assert proc.returncode == 2, proc.returncode
        assert not proc.stdout.startswith("["), proc.stdout[:200]
        frame = f"{_relative(header['file'], root)}:{header['line']}" if header else None
        in_deps = bool(frame and frame.startswith("node_modules/"))
        return {
            "verdict": "env_failure" if in_deps else "failed",
            "failing_ids": [],
            "frame": frame,
            "error_type": error["type"] if error else None,
            "message": error["msg"] if error else None,
        }

    return truth


def prettier_truth(paths: list[str]) -> Truth:
    """Facts from prettier's own ``--list-different`` (a second run): the files it would rewrite."""

    def truth(root: Path, env: dict[str, str], captured: str) -> dict[str, Any]:
        files = run(["npx", "prettier", "--list-different", *paths], root, env).stdout.split()
        return {"verdict": "failed" if files else "green", "failing_ids": files}

    return truth


def xo_crash_truth() -> Truth:
    """xo's own verdict on a rule that crashed: no JSON report from ``--reporter=json`` (a second
    run); the error node printed (Type: message) and its innermost stack frame."""

    def truth(root: Path, env: dict[str, str], captured: str) -> dict[str, Any]:
        proc = run(["npx", "xo", "--reporter=json"], root, env)
        text = proc.stderr + proc.stdout
        assert not proc.stdout.startswith("["), proc.stdout[:200]
        error = re.search(r"^(?P<type>\w*Error): (?P<msg>.+)\nOccurred while linting", text, re.M)
        frame = re.search(r"^\s+at .*?\(?(?P<file>/[^\s():]+):(?P<line>\d+):\d+\)?$", text, re.M)
        where = f"{_relative(frame['file'], root)}:{frame['line']}" if frame else None
        return {
            "verdict": "env_failure" if where and where.startswith("node_modules/") else "failed",
            "failing_ids": [],
            "frame": where,
            "error_type": error["type"] if error else None,
            "message": error["msg"] if error else None,
        }

    return truth


def node_uncaught_truth(argv: list[str]) -> Truth:
    """node's own report of the exception that ended a plain ``node test.js`` (a second run): its
    exit code, the ``/abs/file.js:LINE`` header and the ``Type: message`` line under it."""

    def truth(root: Path, env: dict[str, str], captured: str) -> dict[str, Any]:
        proc = run(argv, root, env)
        text = proc.stderr + proc.stdout
        header = re.search(r"^(?:file://)?(?P<file>/\S+):(?P<line>\d+)$", text, re.M)
        error = re.search(r"^(?P<type>[A-Z]\w*Error): (?P<msg>.+)$", text, re.M)
        return {
            "verdict": "failed" if proc.returncode else "green",
            "failing_ids": [],
            "frame": f"{_relative(header['file'], root)}:{header['line']}" if header else None,
            "error_type": error["type"] if error else None,
            "message": error["msg"] if error else None,
        }

    return truth


def go_too_old_truth() -> Truth:
    """go.mod's ``go`` line against the toolchain's own ``go env GOVERSION``: a module that asks
    for a newer Go than the one installed cannot be built as written (go 1.19 has no toolchain
    download), whatever the code says."""

    def truth(root: Path, env: dict[str, str], captured: str) -> dict[str, Any]:
        want = re.search(r"^go (\d+)\.(\d+)", (root / "go.mod").read_text(), re.M)
        have = re.match(r"go(\d+)\.(\d+)", run(["go", "env", "GOVERSION"], root, env).stdout)
        assert want and have, (want, have)
        old = (int(have[1]), int(have[2])) < (int(want[1]), int(want[2]))
        return {
            "verdict": "env_failure" if old else "failed",
            "failing_ids": [],
            "message": f"module requires Go {want[1]}.{want[2]}" if old else None,
        }

    return truth


def node_glob_truth(pattern: str) -> Truth:
    """``node --test '<glob>'``: node expands the pattern itself from version 21 on; an older node
    (``node --version``) looks for a file of that literal name and runs no test at all."""

    def truth(root: Path, env: dict[str, str], captured: str) -> dict[str, Any]:
        major = int(run(["node", "--version"], root, env).stdout.strip().lstrip("v").split(".")[0])
        proc = run(["node", "--test", pattern], root, env)
        literal = major < 21 and proc.returncode != 0 and "# tests" not in proc.stdout
        return {
            "verdict": "env_failure" if literal else "failed",
            "failing_ids": [],
            "message": f"Could not find '{root / pattern}'" if literal else None,
        }

    return truth


def _junit_outcome(case: ElementTree.Element) -> str:
    if case.find("failure") is not None or case.find("error") is not None:
        return "failed"
    return "skipped" if case.find("skipped") is not None else "passed"


def strip_ansi(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def _relative(name: str, root: Path) -> str:
    return name.removeprefix(f"{root}/")


CASES: list[Case] = [
    Case(
        tool="go",
        name="sync-0",
        repo="golang/sync",
        commit="14be23e5b48bec28285f8a694875175ecacfddb3",  # v0.7.0: go 1.18, stdlib only
        argv=["go", "test", "-v", "./..."],
        truth=go_json_truth(["go", "test", "./..."]),
        ground_truth="go-test-json",
        version=["go", "version"],
    ),
    Case(
        tool="go",
        name="sync-1",
        repo="golang/sync",
        commit="14be23e5b48bec28285f8a694875175ecacfddb3",
        argv=["go", "test", "-json", "./..."],
        truth=go_json_truth(["go", "test", "-json", "./..."]),
        ground_truth="go-test-json",
        mutation={
            "file": "semaphore/semaphore.go",
            "line": 113,
            "kind": "comparison flipped",
            "before": "s.size-s.cur >= n",
            "after": "s.size-s.cur > n",
        },
        version=["go", "version"],
    ),
    Case(
        tool="go",
        name="golang-lru-race-1",
        repo="hashicorp/golang-lru",
        commit="5dd697da12cfd1af9605fbf9968cac4104eb1788",  # v2: go 1.19, stdlib only
        argv=["go", "test", "-race", "-v", "./..."],
        truth=go_report_truth(["go", "test", "-race", "./..."]),
        ground_truth="go-test-json (-race): actions, and the race reports in the output events",
        mutation={
            "file": "expirable/expirable_lru.go",
            "line": 137,
            "kind": "unlock no longer deferred: Get reads the list unlocked",
            "before": "defer c.mu.Unlock()",
            "after": "c.mu.Unlock()",
        },
        version=["go", "version"],
    ),
    Case(
        tool="go",
        name="golang-lru-example-1",
        repo="hashicorp/golang-lru",
        commit="5dd697da12cfd1af9605fbf9968cac4104eb1788",
        argv=["go", "test", "-v", "./..."],
        truth=go_report_truth(["go", "test", "./..."]),
        ground_truth="go-test-json: actions, and ExampleLRU's got/want output events",
        mutation={
            "file": "expirable/expirable_lru.go",
            "line": 145,
            "kind": "return value: the zero value for the entry's",
            "before": "return ent.Value, true",
            "after": "return value, true",
        },
        version=["go", "version"],
    ),
    Case(
        tool="node-test",
        name="ccount-0",
        repo="wooorm/ccount",
        commit="25cc9b181e7247a906cde41b3a6ebad776f86d08",
        argv=["node", "--test"],
        truth=node_junit_truth(["node", "--test"], {}),
        ground_truth="node-junit",
        version=["node", "--version"],
    ),
    Case(
        tool="node-test",
        name="ccount-1",
        repo="wooorm/ccount",
        commit="25cc9b181e7247a906cde41b3a6ebad776f86d08",
        argv=["node", "--test"],
        truth=node_junit_truth(
            ["node", "--test"], {"error_type": "SyntaxError", "frame": "index.js:22"}
        ),
        ground_truth="node-junit (ids, counts); the mutation (frame, error type)",
        mutation={
            "file": "index.js",
            "line": 22,
            "kind": "syntax error",
            "before": "count++",
            "after": "count++)",
        },
        version=["node", "--version"],
    ),
    Case(
        tool="node-test",
        name="ccount-2",
        repo="wooorm/ccount",
        commit="25cc9b181e7247a906cde41b3a6ebad776f86d08",
        argv=["node", "--test", "--test-reporter=spec"],
        truth=node_junit_truth(
            ["node", "--test"], {"error_type": "SyntaxError", "frame": "index.js:22"}
        ),
        ground_truth="node-junit (ids, counts); the mutation (frame, error type)",
        mutation={
            "file": "index.js",
            "line": 22,
            "kind": "syntax error",
            "before": "count++",
            "after": "count++)",
        },
        version=["node", "--version"],
    ),
]


CASES += [
    Case(
        tool="xo",
        name="camelcase-1",
        repo="sindresorhus/camelcase",
        commit="8596a65fcbfedd474cdedf16f48b7d9381eb7953",
        argv=["npx", "xo"],
        truth=xo_json_truth(),
        ground_truth="xo --reporter=json",
        mutation={
            "file": "index.js",
            "line": 1,
            "kind": "const to var",
            "before": "const UPPERCASE",
            "after": "var UPPERCASE",
        },
        version=["npx", "xo", "--version"],
        install=["npm", "install", "--no-audit", "--no-fund"],
    ),
    Case(
        tool="tsd",
        name="camelcase-1",
        repo="sindresorhus/camelcase",
        commit="8596a65fcbfedd474cdedf16f48b7d9381eb7953",
        argv=["npx", "tsd"],
        truth=tsd_api_truth("failed"),
        ground_truth="tsd's API (tsd().then(diagnostics))",
        mutation={
            "file": "index.test-d.ts",
            "line": 4,
            "kind": "expected type changed",
            "before": "expectType<string>(camelCase('foo-bar'))",
            "after": "expectType<number>(camelCase('foo-bar'))",
        },
        version=TSD_VERSION,
        install=["npm", "install", "--no-audit", "--no-fund"],
    ),
    Case(
        tool="tsd",
        name="escape-string-regexp-0",
        repo="sindresorhus/escape-string-regexp",
        commit="cbc42403142c96923b482604e1f3d627b1956aff",
        argv=["npx", "tsd"],
        truth=tsd_api_truth("env_failure"),
        to_files=True,
        ground_truth="tsd's API: every diagnostic's file is in node_modules (@types/node newer than "
        "the TypeScript tsd bundles)",
        version=TSD_VERSION,
        install=["npm", "install", "--no-audit", "--no-fund"],
    ),
    Case(
        tool="cargo-test",
        name="scopeguard-1",
        repo="bluss/scopeguard",
        commit="bb988222848d39b0b9037b29da3a3a1eb05ebf4b",  # v1.2.0: no dependencies
        argv=["cargo", "test"],
        truth=libtest_json_truth(),
        ground_truth="libtest --format json (RUSTC_BOOTSTRAP=1), a second run",
        mutation={
            "file": "src/lib.rs",
            "line": 474,
            "kind": "condition negated",
            "before": "if S::should_run()",
            "after": "if !S::should_run()",
        },
        version=["cargo", "--version"],
    ),
    Case(
        tool="cargo-clippy",
        name="scopeguard-0",
        repo="bluss/scopeguard",
        commit="bb988222848d39b0b9037b29da3a3a1eb05ebf4b",  # v1.2.0 (2023) under today's clippy
        argv=["cargo", "clippy", "--", "-D", "warnings"],
        truth=clippy_json_truth(["cargo", "clippy", "--", "-D", "warnings"]),
        ground_truth="cargo clippy --message-format=json: each error's code and primary span",
        version=["cargo", "clippy", "--version"],
    ),
    Case(
        tool="vitest",
        name="ohash-0",
        repo="unjs/ohash",
        commit="764b0a3203308956ef07597612af5ad59f36c791",  # src/hash.ts imports "ohash/crypto"
        argv=["npx", "vitest", "run"],
        truth=vitest_unbuilt_truth(),
        ground_truth="vitest --reporter=json: every failure an unresolved import of the package "
        "itself, whose exports (dist/) do not exist before `pnpm build` (CI builds first)",
        version=["npx", "vitest", "--version"],
        install=["npm", "install", "--no-audit", "--no-fund"],
        repo_files=["package.json"],
    ),
    Case(
        tool="jest",
        name="jest-extended-1",
        repo="jest-community/jest-extended",
        commit="aef46108bec538d29542cb19ebc2f90e069052b8",  # jest 30 + ts-jest, snapshot files
        argv=["npm", "test"],
        truth=jest_json_truth(["npx", "jest", "--color=true"]),
        ground_truth="jest --json: success false, no failed test, snapshot.uncheckedKeysByFile",
        mutation={
            "file": "test/matchers/toBeEven.test.ts",
            "line": 34,
            "kind": "test renamed: its snapshot is obsolete (and a new one written)",
            "before": "fails when given an even BigInt",
            "after": "fails when given an even bigint",
        },
        version=["npx", "jest", "--version"],
        install=["npm", "install", "--no-audit", "--no-fund", "--legacy-peer-deps"],
    ),
    Case(
        tool="jest",
        name="jest-extended-2",
        repo="jest-community/jest-extended",
        commit="aef46108bec538d29542cb19ebc2f90e069052b8",
        argv=["npm", "test"],
        truth=jest_json_truth(["npx", "jest", "--color=true"]),
        ground_truth="jest --json: the suite that failed to run and ts-jest's diagnostic",
        mutation={
            "file": "src/matchers/toBeEven.ts",
            "line": 5,
            "kind": "type annotation: a boolean declared a string (ts-jest type error)",
            "before": "const pass =",
            "after": "const pass: string =",
        },
        version=["npx", "jest", "--version"],
        install=["npm", "install", "--no-audit", "--no-fund", "--legacy-peer-deps"],
    ),
    Case(
        tool="cargo-test",
        name="scopeguard-doc-1",
        repo="bluss/scopeguard",
        commit="bb988222848d39b0b9037b29da3a3a1eb05ebf4b",
        argv=["cargo", "test", "--doc"],
        truth=libtest_json_truth(("--doc",)),
        ground_truth="libtest --format json of the doc tests (RUSTC_BOOTSTRAP=1), a second run",
        mutation={
            "file": "src/lib.rs",
            "line": 232,
            "kind": "return value: the Always strategy never runs",
            "before": "true",
            "after": "false",
        },
        version=["cargo", "--version"],
    ),
    Case(
        tool="eslint",
        name="mitt-0",
        repo="developit/mitt",
        commit="6b41670516ed8e8b738612f60491995470aa63b3",  # 3.0.1, no lockfile: today's deps
        argv=["npx", "eslint", "."],
        truth=eslint_crash_truth(),
        ground_truth="eslint --format json: exit 2 and no report (a crash); node's error header",
        version=["npx", "eslint", "--version"],
        install=["npm", "install", "--no-audit", "--no-fund"],
    ),
    Case(
        tool="prettier",
        name="destr-1",
        repo="unjs/destr",
        commit="541b6f9aeada9fc30de9c5a7e086dbfc1c6fcdc7",  # its lint: eslint . && prettier -c src test
        argv=["npx", "prettier", "-c", "src", "test"],
        truth=prettier_truth(["src", "test"]),
        ground_truth="prettier --list-different src test",
        mutation={
            "file": "src/index.ts",
            "line": 49,
            "kind": "formatting slip",
            "before": "return true as T;",
            "after": "return true as T ;",
        },
        version=["npx", "prettier", "--version"],
        install=[
            "sh", "-c", "npm install -q --prefix /tmp/glreal-verdicts/.pnpm pnpm@10 && "
            "/tmp/glreal-verdicts/.pnpm/node_modules/.bin/pnpm install --frozen-lockfile "
            "--config.manage-package-manager-versions=false",
        ],
    ),
    Case(
        tool="xo",
        name="longest-streak-0",
        repo="wooorm/longest-streak",
        commit="fe3a930de34ad4a792d343fe6d1bcf390627881f",
        argv=["npx", "xo"],
        truth=xo_crash_truth(),
        ground_truth="xo --reporter=json: no report (a rule crashed); node's error and stack",
        version=["npx", "xo", "--version"],
        install=["npm", "install", "--no-audit", "--no-fund"],
    ),
    Case(
        tool="node-test",
        name="longest-streak-1",
        repo="wooorm/longest-streak",
        commit="fe3a930de34ad4a792d343fe6d1bcf390627881f",  # test-api: node --conditions development test.js
        argv=["npm", "run", "test-api"],
        truth=node_uncaught_truth(["node", "--conditions", "development", "test.js"]),
        ground_truth="node's uncaught-exception report of a second run (exit code, file:line, Type: message)",
        mutation={
            "file": "index.js",
            "line": 24,
            "kind": "syntax",
            "before": "if (++count > max) {",
            "after": "if (++count > max {",
        },
        version=["node", "--version"],
        install=["npm", "install", "--no-audit", "--no-fund"],
    ),
    Case(
        tool="go-test",
        name="go-cmp-0",
        repo="google/go-cmp",
        commit="b133f1f1932e48f466f597a3346ce6f5a49a0dc1",  # go.mod: go 1.21; here go 1.19
        argv=["go", "test", "./..."],
        truth=go_too_old_truth(),
        ground_truth="go.mod's go line (1.21) against `go env GOVERSION` (go1.19.8)",
        version=["go", "version"],
    ),
    Case(
        tool="node-test",
        name="abbrev-js-glob-0",
        repo="npm/abbrev-js",
        commit="1d40d021a44c834b9a6530cdb02611095a6248fe",  # test: node --test './test/**/*.js'
        argv=["npm", "test"],
        truth=node_glob_truth("test/**/*.js"),
        ground_truth="`node --version` (v20: no glob expansion) and `node --test 'test/**/*.js'` "
        "(a second run: no TAP summary, no test ran)",
        version=["node", "--version"],
        install=["npm", "install", "--no-audit", "--no-fund"],
    ),
]


def capture(case: Case) -> Path:
    env = environment()
    root = checkout(case, env)
    proc = run_to_files(case.argv, root, env) if case.to_files else run(case.argv, root, env)
    facts = {"error_type": None, "message": None, "frame": None} | case.truth(root, env, proc.stdout)
    version = run(case.version, root, env).stdout.strip().splitlines()[0] if case.version else ""
    data = {
        "tool": case.tool,
        "case": case.name,
        "project": case.repo.split("/")[1],
        "repo": case.repo,
        "commit": case.commit,
        "argv": case.argv,
        "cwd_placeholder": str(root),
        "exit_code": proc.returncode,
        "stdout": proc.stdout,
        "stderr": proc.stderr,
        "tool_version": version,
        "captured_at": datetime.date.today().isoformat(),
        "env": FORCED_ENV,
        "mutation": case.mutation,
        "facts": facts,
        "facts_unverified": case.unverified,
        "ground_truth": case.ground_truth,
    }
    if case.repo_files:
        data["repo_files"] = {name: (root / name).read_text() for name in case.repo_files}
    out = REAL / case.tool / case.name
    out.mkdir(parents=True, exist_ok=True)
    (out / "case.json").write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    (out / "case.txt").write_text(proc.stdout + proc.stderr)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=[], help="case name (tool/name)")
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    for case in CASES:
        if args.only and f"{case.tool}/{case.name}" not in args.only:
            continue
        if shutil.which(case.argv[0]) is None:
            print(f"[skipped] {case.tool}/{case.name}: {case.argv[0]} not installed")
            continue
        print(f"[captured] {capture(case)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

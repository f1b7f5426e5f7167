"""Ground truth for Go and Rust: ``go test -json``, go build/vet lines, cargo's JSON and libtest.

Go builds with Debian's go 1.19 and no module proxy (``GOPROXY=off GOTOOLCHAIN=local
GOFLAGS=-mod=mod``), so the projects are stdlib-only; Rust has no crates.io, so the
crates have no dependencies at the pinned commit.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from truth import Truth, strip_ansi

_GO_LOC = re.compile(r"^\s+(\w[\w./-]*\.go):(\d+): (.*)$")
_GO_DIAG = re.compile(r"^(?:vet: )?(\.?/?[\w./-]+\.go):(\d+):(\d+): (.*)$", re.MULTILINE)


def read_go_test(report: str, *, root: Path) -> Truth:
    """``go test -json``: fail/pass/skip events per test; leaf tests are counted."""
    events = [json.loads(line) for line in report.splitlines() if line.startswith("{")]
    if not any(e.get("Test") for e in events) and _GO_DIAG.search(report):
        return read_go_diagnostics(report, root=root)  # the package did not build
    ids: list[str] = []
    outputs: dict[str, list[str]] = {}
    tally = {"pass": 0, "fail": 0, "skip": 0}
    tests = {e["Test"] for e in events if e.get("Test")}
    for event in events:
        name = event.get("Test")
        if not name:
            continue
        if event["Action"] == "output":
            outputs.setdefault(name, []).append(event.get("Output", ""))
        elif event["Action"] in tally and not any(t.startswith(name + "/") for t in tests):
            tally[event["Action"]] += 1
            if event["Action"] == "fail":
                ids.append(name)
    error_type, message = _go_failure(outputs.get(ids[0], []) if ids else [])
    return Truth(
        ids=tuple(ids),
        error_type=error_type,
        message=message,
        passed=tally["pass"],
        failed=tally["fail"],
        skipped=tally["skip"],
        source="go test -json",
    )


def _go_failure(lines: list[str]) -> tuple[str | None, str | None]:
    for line in lines:
        if line.startswith("panic: "):
            return "panic", line[len("panic: ") :].strip()
        match = _GO_LOC.match(line)
        if match:
            return None, match[3].strip()
    return None, None


def go_test_frame(report: str) -> str | None:
    for line in report.splitlines():
        if line.startswith("{"):
            match = _GO_LOC.match(json.loads(line).get("Output", ""))
            if match:
                return f"{match[1]}:{match[2]}"
    return None


def read_go_diagnostics(report: str, *, root: Path) -> Truth:
    """``go build`` / ``go vet`` (and a build failure under ``go test``): ``file:line:col: msg``."""
    diags = [m for m in map(_GO_DIAG.match, strip_ansi(report).splitlines()) if m]
    return Truth(
        ids=(),
        error_type=None,
        message=diags[0][4] if diags else None,
        failed=len(diags),
        source="go diagnostics (file:line:col: message)",
    )


def go_diag_frame(report: str) -> str | None:
    match = next(filter(None, map(_GO_DIAG.match, strip_ansi(report).splitlines())), None)
    return f"{match[1].removeprefix('./')}:{match[2]}" if match else None


def read_cargo_json(report: str, *, root: Path) -> Truth:
    """``cargo build --message-format=json``: compiler errors (codes) first one first."""
    errors = []
    for line in report.splitlines():
        if not line.startswith("{"):
            continue
        event = json.loads(line)
        message = event.get("message") if event.get("reason") == "compiler-message" else None
        if message and message.get("level") == "error" and message.get("spans"):
            errors.append(message)
    codes = tuple((m.get("code") or {}).get("code") or "" for m in errors)
    return Truth(
        ids=tuple(c for c in codes if c),
        error_type=next((c for c in codes if c), None),
        message=errors[0]["message"] if errors else None,
        failed=len(errors),
        source="cargo --message-format=json",
    )


def cargo_json_frame(report: str) -> str | None:
    for line in report.splitlines():
        if line.startswith("{"):
            message = json.loads(line).get("message") or {}
            spans = [s for s in message.get("spans", []) if s.get("is_primary")]
            if message.get("level") == "error" and spans:
                return f"{spans[0]['file_name']}:{spans[0]['line_start']}"
    return None


_LIBTEST = re.compile(r"^test (\S+) \.\.\. (ok|FAILED|ignored)")
_RESULT = re.compile(r"^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored")
_PANIC = re.compile(r"^thread '([^']+)' panicked at ([\w./-]+\.rs):(\d+):\d+:$")


def read_libtest(report: str, *, root: Path) -> Truth:
    """libtest's per-test lines from ``cargo test --no-fail-fast -- --test-threads=1``."""
    compiled = read_cargo_json(report, root=root)
    if compiled.failed:
        return compiled  # a test target did not compile: no test ran
    lines = strip_ansi(report).splitlines()
    ids = [m[1] for m in map(_LIBTEST.match, lines) if m and m[2] == "FAILED"]
    totals = [tuple(map(int, m.groups())) for m in map(_RESULT.match, lines) if m]
    message = None
    for index, line in enumerate(lines):
        if _PANIC.match(line) and index + 1 < len(lines):
            message = lines[index + 1].strip()
            break
    return Truth(
        ids=tuple(ids),
        error_type="panic" if message else None,
        message=message,
        passed=sum(t[0] for t in totals) if totals else None,
        failed=sum(t[1] for t in totals) if totals else None,
        skipped=sum(t[2] for t in totals) if totals else None,
        source="libtest lines of cargo test --no-fail-fast -- --test-threads=1",
    )


def libtest_frame(report: str) -> str | None:
    for match in map(_PANIC.match, strip_ansi(report).splitlines()):
        if match:
            return f"{match[2]}:{match[3]}"
    return None

"""Ground truth for Go and Rust: ``go test -json``, go build/vet lines, cargo's JSON and libtest.

Go builds with Debian's go 1.19 and no module proxy (``GOPROXY=off GOTOOLCHAIN=local
GOFLAGS=-mod=mod``), so the projects are stdlib-only; Rust has no crates.io, so the
crates have no dependencies at the pinned commit.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from truth import Truth, make_truth, strip_ansi

_GO_LOC = re.compile(r"^\s+(\w[\w./-]*\.go):(\d+): (.*)$")
_GO_DIAG = re.compile(r"^(?:vet: )?(\.?/?[\w./-]+\.go):(\d+):(\d+): (.*)$", re.MULTILINE)


def read_go_test(report: str, *, root: Path) -> Truth:
    """``go test -json``: fail/pass/skip events per test; leaf tests are counted."""
    events = [json.loads(line) for line in report.splitlines() if line.startswith("{")]
    if not any(e.get("Test") for e in events) and _GO_DIAG.search(report):
        built = read_go_diagnostics(report, root=root)  # the package did not build: no test ran
        return Truth(message=built.message, source="go test -json (build failed: no counts)")
    ids: list[str] = []
    outputs: dict[str, list[str]] = {}
    tally = {"pass": 0, "fail": 0, "skip": 0}
    # a parent is one in its own package: another package's test of the same name is a test of its own
    tests = {(e.get("Package"), e["Test"]) for e in events if e.get("Test")}
    for event in events:
        name = event.get("Test")
        if not name:
            continue
        package = event.get("Package")
        if event["Action"] == "output":
            outputs.setdefault(name, []).append(event.get("Output", ""))
        elif event["Action"] in tally and not any(
            p == package and t.startswith(name + "/") for p, t in tests
        ):
            tally[event["Action"]] += 1
            if event["Action"] == "fail":
                ids.append(name)
    hung = _timed_out(events, tests)
    ids += hung
    tally["fail"] += len(hung)
    error_type, message = _go_failure(outputs.get(ids[0], []) if ids else [])
    if hung and not message:
        message = next((e["Output"].strip() for e in events if _TIMED_OUT in e.get("Output", "")), None)
    if not ids and _GO_DIAG.search(report):  # one package did not build, the others ran
        message = read_go_diagnostics(report, root=root).message
    return Truth(
        ids=tuple(ids),
        error_type=error_type,
        message=message,
        passed=tally["pass"],
        failed=tally["fail"],
        skipped=tally["skip"],
        source="go test -json",
    )


_TIMED_OUT = "panic: test timed out after "


def _timed_out(events: list[dict], tests: set[tuple[str | None, str]]) -> list[str]:
    """``-timeout``: the binary panics and go test -json ends no event of the tests still running
    (Go 1.19); each of them failed, leaves counted as for the others."""
    timed_out = {e.get("Package") for e in events if _TIMED_OUT in e.get("Output", "")}
    ended = {(e.get("Package"), e["Test"]) for e in events if e.get("Test") and e["Action"] in ("pass", "fail", "skip")}
    running = [
        (e.get("Package"), e["Test"]) for e in events
        if e.get("Test") and e["Action"] == "run" and e.get("Package") in timed_out
    ]
    return [
        name for package, name in running
        if (package, name) not in ended
        and not any(p == package and t.startswith(name + "/") for p, t in tests)
    ]


def _go_failure(lines: list[str]) -> tuple[str | None, str | None]:
    """A panic's value, or the first line of the first ``t.Error`` text that is not a header.

    ``t.Errorf("\nError:\nExpected an error, ...")`` (BurntSushi/toml) prints the location line
    empty and ``Error:`` under it: the message is the line that says what went wrong.
    """
    text = "".join(lines).splitlines()
    for index, line in enumerate(text):
        if line.startswith("panic: "):
            return "panic", line[len("panic: ") :].strip().removesuffix(" [recovered]")
        match = _GO_LOC.match(line) or re.match(r"^\s+(\w[\w./-]*\.go):(\d+):()\s*$", line)
        if match:
            body = [match[3].strip(), *(ln.strip() for ln in text[index + 1 :])]
            return None, next((b for b in body if b and not b.endswith(":")), None)
    return None, None



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



_LIBTEST = re.compile(r"^test (.+?) \.\.\. (ok|FAILED|ignored)")
_RESULT = re.compile(r"^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored")
_PANIC = re.compile(r"^thread '([^']+)'(?: \(\d+\))? panicked at ([\w./-]+\.rs):(\d+):\d+:$")
_DIED = re.compile(r"process didn't exit successfully: .*\(signal: (\d+), (\w+)")


def read_libtest(report: str, *, root: Path) -> Truth:
    """libtest's per-test lines from ``cargo test --no-fail-fast -- --test-threads=1``."""
    compiled = read_cargo_json(report, root=root)
    if compiled.failed:  # a test target did not compile: no test ran, no counts
        return Truth(ids=compiled.ids, error_type=compiled.error_type, message=compiled.message,
                     source="libtest: a target failed to compile (cargo --message-format=json)")  # fmt: skip
    lines = strip_ansi(report).splitlines()
    ids = [m[1] for m in map(_LIBTEST.match, lines) if m and m[2] == "FAILED"]
    totals = [tuple(map(int, m.groups())) for m in map(_RESULT.match, lines) if m]
    message = None
    for index, line in enumerate(lines):
        if _PANIC.match(line) and index + 1 < len(lines):
            message = lines[index + 1].strip()
            break
    died = next(filter(None, map(_DIED.search, lines)), None)
    if died and not ids:  # a test binary died from a signal: cargo's own line says which
        message = f"signal: {died[1]}, {died[2]}"
        return Truth(error_type=died[2], message=message, killed=True, source="cargo test")
    return Truth(
        ids=tuple(ids),
        error_type="panic" if message else None,
        message=message,
        passed=sum(t[0] for t in totals) if totals else None,
        failed=sum(t[1] for t in totals) if totals else None,
        skipped=sum(t[2] for t in totals) if totals else None,
        source="libtest lines of cargo test --no-fail-fast -- --test-threads=1",
    )


TRUTHS = {
    "go-json": make_truth(read_go_test),
    "go-diag": make_truth(read_go_diagnostics),
    "cargo-json": make_truth(read_cargo_json),
    "libtest": make_truth(read_libtest),
}

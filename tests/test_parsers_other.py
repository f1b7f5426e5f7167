"""Non-Python parsers over REAL captured outputs (tests/resources/outputs/<tool>/<case>.json)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from greenloop.parsers import (
    ParseResult,
    ParserInput,
    ava,
    generic,
    go,
    jasmine,
    js,
    junit,
    mocha,
    native,
    parse_output,
    ruby,
    rust,
    tap,
    uvu,
)
from greenloop.parsers.model import Failure
from greenloop.processes.process import run_command

# Catastrophic regex backtracking would take minutes: fail instead of hanging CI. Counted in this
# process's CPU seconds (time.process_time), not wall seconds: parsing runs in-process, and on 2 cores
# at load 30-44 the wall clock of these 10 MB lines reached 51-73 s; quiet, the slowest case takes 3.5 s.
HANG_GUARD_S = 30.0

OUTPUTS = Path(__file__).parent / "resources" / "outputs"
REAL = Path(__file__).parent / "resources" / "real"
TOOLS = (
    "cargo",
    "go",
    "jest",
    "vitest",
    "node-test",
    "tsc",
    "eslint",
    "prettier",
    "rspec",
    "minitest",
    "make",
    "ctest",
    "phpunit",
    "javac",
    "mocha",
    "uvu",
    "ava",
    "tap",
)
# Facts that are true but that the tool never prints, so no parser can recover them.
NOT_PRINTED: dict[str, set[str]] = {
    "cargo/test_sigsegv": {"failing_ids", "frame"},  # the binary died before naming the test
    "cargo/test_abort": {"failing_ids", "frame"},
    "go/vet": {"failing_ids", "error_type"},  # the analyzer name (printf) is not in text output
    "go/two_packages": {"frame"},  # go prints x_test.go:6 without its package folder (a/)
    "go/two_packages_verbose": {"frame"},  # go prints x_test.go:6 without its package folder (a/)
    "go/two_packages_json": {"frame"},  # go prints x_test.go:6 without its package folder (a/)
    "phpunit/failure_and_error": {"error_type"},  # PHPUnit 9 prints no class for failures
}
PARSE_FNS = (
    rust.parse,
    go.parse,
    js.parse,
    mocha.parse,
    uvu.parse,
    jasmine.parse,
    ava.parse,
    tap.parse,
    ruby.parse,
    native.parse,
    junit.parse,
    generic.parse,
)


def _cases() -> list[Path]:
    return sorted(p for tool in TOOLS for p in (OUTPUTS / tool).glob("*.json"))


def _load(path: Path) -> tuple[dict[str, Any], ParserInput]:
    data = json.loads(path.read_text(encoding="utf-8"))
    inp = ParserInput(
        argv=tuple(data["argv"]) if isinstance(data["argv"], list) else ("sh", "-c", data["argv"]),
        exit_code=data["exit_code"],
        stdout=data["stdout"],
        stderr=data["stderr"],
        root=data["cwd_placeholder"],
    )
    return data, inp


def _flat(text: str) -> str:
    return " ".join(text.split())


def _matches_id(failure: Failure, wanted: str) -> bool:
    return wanted in (failure.id, failure.code) or failure.id.endswith("." + wanted)


def _locations(failure: Failure) -> set[str]:
    found = {f"{fr.file}:{fr.line}" for fr in failure.frames}
    return found | {f"{failure.file}:{failure.line}"}


def _explains(failure: Failure, facts: dict[str, Any], skip: set[str]) -> bool:
    """Does this one failure carry the case's error type, message and frame together?"""
    wanted_type = facts["error_type"] if "error_type" not in skip else None
    if wanted_type and wanted_type not in (failure.error_type, failure.code):
        return False
    text = _flat(" ".join((failure.message, *failure.detail)))
    if facts["message"] and _flat(facts["message"]) not in text:
        return False
    return not (
        facts["frame"] and "frame" not in skip and facts["frame"] not in _locations(failure)
    )


@pytest.mark.parametrize("path", _cases(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_parser_recovers_the_facts_of_each_real_output(path: Path) -> None:
    data, inp = _load(path)
    facts = data["facts"]
    skip = NOT_PRINTED.get(f"{path.parent.name}/{path.stem}", set())
    result = parse_output(inp)
    assert not result.notes or all("parser failed" not in n for n in result.notes), result.notes
    if facts["count_failed"] == 0 and not facts["failing_ids"]:  # a green run: nothing failed
        assert not result.errors, result.errors
        return
    if "failing_ids" not in skip:
        for wanted in facts["failing_ids"]:
            assert any(_matches_id(f, wanted) for f in result.failures), (wanted, result.failures)
    assert any(_explains(f, facts, skip) for f in result.failures), result.failures
    _check_count(result, facts["count_failed"])
    assert bool(result.killed) is facts["killed"], result.killed
    if facts["killed"]:  # seed 003: a killed run is incomplete, never "0 failures"
        assert not result.counts.summary_seen
        assert result.failures


def _check_count(result: ParseResult, expected: int | None) -> None:
    if expected is None:
        return
    if result.counts.summary_seen and any(f.kind == "test" for f in result.failures):
        assert result.counts.failing == expected, result.counts
    else:
        assert expected in (len(result.failures), len(result.errors)), result.failures


# ---- never raise, never hang ------------------------------------------------------------------
def _feed(
    text: str, *, argv: tuple[str, ...] = ("tool",), artifacts: tuple[tuple[str, str], ...] = ()
) -> None:
    inp = ParserInput(
        argv=argv, exit_code=1, stdout=text, stderr=text[-500:], root="/r", artifacts=artifacts
    )
    for fn in PARSE_FNS:
        result = fn(inp)
        assert isinstance(result, ParseResult)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text())
def test_parsers_never_raise_on_random_text(text: str) -> None:
    _feed(text, artifacts=(("report.xml", text),))


@settings(max_examples=150, deadline=None)
@given(st.binary())
def test_parsers_never_raise_on_random_bytes(data: bytes) -> None:
    _feed(data.decode("utf-8", errors="replace"))


_REAL_LINES = [
    line
    for p in _cases()
    for line in _load(p)[1].stdout.splitlines() + _load(p)[1].stderr.splitlines()
]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(_REAL_LINES), max_size=80))
def test_parsers_never_raise_on_interleaved_real_lines(lines: list[str]) -> None:
    _feed("\n".join(lines))


@pytest.mark.parametrize("path", _cases(), ids=lambda p: f"{p.parent.name}/{p.stem}")
@settings(max_examples=25, deadline=None)
@given(cut=st.floats(min_value=0, max_value=1))
def test_parsers_never_raise_on_truncated_real_output(path: Path, cut: float) -> None:
    _, inp = _load(path)
    text = inp.stdout + "\n" + inp.stderr
    _feed(text[: int(len(text) * cut)], argv=inp.argv)


_HUGE_SHAPES = (
    "x" * 10_000_000,
    "  \u25cf " + "a \u203a " * 2_500_000,
    "at a (" * 1_700_000,
    "a:1:" * 2_500_000,
    " " * 10_000_000 + "x",
    "error[E0308]: " + "a " * 5_000_000,
    "main.c:1:2: error: " + "(" * 10_000_000,
    "--- FAIL: " + "T" * 10_000_000,
    '[{"filePath":"' + "a" * 10_000_000,
)


@pytest.mark.parametrize("shape", range(len(_HUGE_SHAPES)))
def test_parsers_finish_a_10mb_single_line_without_hanging(shape: int) -> None:
    started = time.process_time()
    _feed(_HUGE_SHAPES[shape], artifacts=(("big.xml", "<a>" * 100_000),))
    assert time.process_time() - started < HANG_GUARD_S  # speed is measured in bench/, not here


# ---- real runs: JUnit XML, wrappers, KILLED lines -------------------------------------------------
def _run(argv: list[str], cwd: Path) -> ParserInput:
    result = run_command(argv, cwd=cwd, timeout_s=120)
    return ParserInput(
        argv=result.argv,
        exit_code=result.exit_code,
        stdout=result.stdout,
        stderr=result.stderr,
        merged=result.merged,
        root=str(cwd),
    )


def test_junit_reads_a_real_pytest_junitxml_report(tmp_path: Path) -> None:
    (tmp_path / "test_calc.py").write_text(
        "def add(a, b):\n    return a - b\n\n\ndef test_add():\n    assert add(2, 2) == 4\n\n\ndef test_ok():\n    pass\n"
    )
    run = _run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--junitxml=r.xml"], tmp_path
    )
    inp = ParserInput(artifacts=(("r.xml", (tmp_path / "r.xml").read_text()),), root=str(tmp_path))
    result = junit.parse(inp)
    assert run.exit_code == 1
    assert [f.id for f in result.failures] == ["test_calc.test_add"]
    assert "assert 0 == 4" in result.failures[0].message
    assert (result.counts.passed, result.counts.failed, result.counts.summary_seen) == (1, 1, True)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_junit_reads_a_real_node_test_junit_report(tmp_path: Path) -> None:
    (tmp_path / "a.test.js").write_text(
        'const test = require("node:test");\nconst assert = require("node:assert");\n'
        'test("adds", () => { assert.strictEqual(1 + 1, 3); });\ntest("fine", () => {});\n'
    )
    _run(
        [
            "node",
            "--test",
            "--test-reporter=junit",
            "--test-reporter-destination=r.xml",
            "a.test.js",
        ],
        tmp_path,
    )
    result = junit.parse(
        ParserInput(artifacts=(("r.xml", (tmp_path / "r.xml").read_text()),), root=str(tmp_path))
    )
    assert [f.id for f in result.failures] == ["adds"]
    assert "strictly equal" in result.failures[0].message
    assert ("a.test.js", 3) in {(fr.file, fr.line) for fr in result.failures[0].frames}
    assert (result.counts.passed, result.counts.failed) == (1, 1)


def test_junit_turns_hostile_or_broken_xml_into_a_note() -> None:
    bomb = '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;">]><x>&b;</x>'
    result = junit.parse(
        ParserInput(artifacts=(("bomb.xml", bomb), ("cut.xml", "<testsuite><testcase")))
    )
    assert result.failures == ()
    assert len(result.notes) == 2
    assert not result.counts.summary_seen


def test_npm_test_is_parsed_by_the_tool_its_output_shows() -> None:
    _, inp = _load(OUTPUTS / "jest" / "failures.json")
    result = parse_output(replace(inp, argv=("npm", "test")))
    assert "js" in result.tool
    assert "parseUser › splits name and age" in {f.id for f in result.failures}  # noqa: RUF001


def test_jasmine_names_the_first_failing_spec_and_counts_when_npm_test_runs_it_under_nyc() -> None:
    # slevithan/xregexp: `npm test` = build, then `nyc … jasmine`; jasmine's console reporter
    # (dots, `Failures:`, `N) <full name>` blocks, `419 specs, 6 failures`) was not parsed at all
    _, inp = _load(REAL / "jasmine" / "xregexp-1" / "case.json")
    result = parse_output(inp)
    assert "jasmine" in result.tool
    counts = result.counts
    assert (counts.passed, counts.failed, counts.summary_seen) == (413, 6, True)
    first = result.failures[0]
    assert first.id == (
        "XRegExp.exec() should include named capture properties on the match array"
        " if namespacing is not installed"
    )
    assert (first.error_type, first.message) == (
        "SyntaxError",
        "Cannot use reserved word as capture name (?<name>",
    )
    assert (first.file, first.line) == ("xregexp-all.js", 1252)  # the bundle the specs load
    assert len([f for f in result.failures if f.kind == "test"]) == 6


def test_mocha_sums_each_workspaces_summary_when_npm_test_runs_it_in_every_package() -> None:
    # eslint/rewrite: `npm test --workspaces --if-present`, mocha in 5 packages (44 + 170 + 11 +
    # 66 + 40 passing); only the last package's "40 passing" was kept
    _, inp = _load(REAL / "mocha" / "eslint-rewrite-0" / "case.json")
    counts = parse_output(inp).counts
    assert (counts.passed, counts.failed, counts.summary_seen) == (331, 0, True)


def test_mocha_failure_ends_where_npm_starts_the_next_workspace() -> None:
    # eslint-rewrite-2: @eslint/compat's 2 failures, then npm runs config-array, ... (all green);
    # the last failure's detail ran on into their build banners and passing tests
    _, inp = _load(REAL / "mocha" / "eslint-rewrite-2" / "case.json")
    result = parse_output(inp)
    assert (result.counts.passed, result.counts.failed) == (329, 2)
    assert [f.detail for f in result.failures] == [
        ("Occurred while linting test.js", 'Rule: "test/test-rule"')
    ] * 2


def test_mocha_names_the_test_file_that_failed_to_load_when_one_workspace_crashes() -> None:
    # eslint-rewrite-5: a syntax error in @eslint/compat's src; mocha (ESM) stops that package
    # with "Exception during run: SyntaxError[ @…/tests/ignore-file.js ]: …", the other packages
    # pass: the digest showed only the output's tail (their build warnings), not the error
    _, inp = _load(REAL / "mocha" / "eslint-rewrite-5" / "case.json")
    result = parse_output(inp)
    assert (result.counts.passed, result.counts.errors) == (287, 1)
    crash = result.failures[0]
    assert (crash.file, crash.error_type, crash.message) == (
        "packages/compat/tests/ignore-file.js",
        "SyntaxError",
        "missing ) after argument list",
    )


def test_make_running_cargo_test_is_parsed_as_cargo() -> None:
    _, inp = _load(OUTPUTS / "cargo" / "test_assert_eq.json")
    result = parse_output(replace(inp, argv=("make", "test")))
    assert {"tests::adds", "tests::splits_words"} <= {f.id for f in result.failures}
    assert result.counts.failed == 2


def test_make_s_error_line_is_not_the_first_error_beside_its_recipe_s_failures() -> None:
    # Python-Markdown: `make test` runs unittest; make's "*** [makefile:38: test] Error 1" was the
    # FIRST ERROR ahead of 104 unittest failures, and one more failure in the count
    data, inp = _load(REAL / "unittest" / "markdown-2" / "case.json")
    result = parse_output(inp)
    assert result.errors[0].id == data["facts"]["failing_ids"][0]
    assert len(result.errors) == data["facts"]["counts"]["failed"] == 104
    assert not any("Error 1" in f.message for f in result.failures)


def test_tape_names_the_failing_test_its_assertion_and_the_diff_when_npm_test_lints_first() -> None:
    # minimistjs/minimist: `npm test` = eslint (54 warnings, exit 0), then `nyc tape`; tape's
    # `not ok 5 should be deeply equivalent` (no ` - `) was not read: FAILED with an eslint
    # warning as the first error, "the summary reports no failures"
    _, inp = _load(REAL / "tape" / "minimist-1" / "case.json")
    result = parse_output(inp)
    counts = result.counts
    assert (counts.passed, counts.failed, counts.summary_seen) == (168, 3, True)
    first = result.errors[0]
    assert (first.id, first.message) == (
        "flag boolean true includes consuming true/false",
        "should be deeply equivalent",
    )
    assert (first.file, first.line) == ("test/all_bool.js", 41)
    assert first.detail[0] == "operator: deepEqual"
    assert first.detail[2].startswith("actual: { _: [], aaa: false")


def test_tape_reports_the_uncaught_exception_that_ended_the_run_mid_test() -> None:
    # minimist-2: the argument loop starts at 1; 38 assertions fail, then test/dotted.js throws a
    # TypeError and node ends the process before tape's summary
    _, inp = _load(REAL / "tape" / "minimist-2" / "case.json")
    last = parse_output(inp).errors[-1]
    assert (last.id, last.error_type) == ("dotted array", "TypeError")
    assert last.message == "Cannot use 'in' operator to search for '0' in undefined"
    assert (last.file, last.line) == ("test/dotted.js", 31)


def test_node_uncaught_syntax_error_is_the_first_error_when_no_runner_reported() -> None:
    # lukeed/clsx: `npm test` = `uvu -r esm test`; a syntax error in src/index.js ends node before
    # uvu prints anything: "the output could not be parsed in full"
    _, inp = _load(REAL / "uvu" / "clsx-4" / "case.json")
    (error,) = parse_output(inp).errors
    assert (error.file, error.line, error.error_type) == ("src/index.js", 7, "SyntaxError")
    assert error.message == "Invalid or unexpected token"


def test_vitest_gives_each_test_of_a_group_that_failed_alike_the_groups_one_error() -> None:
    # unjs/ufo, vitest 4: 12 ` FAIL  … > normalizeURL > …` lines, then their one ReferenceError;
    # the first failing test had no error, no message and no place
    _, inp = _load(REAL / "vitest" / "ufo-3" / "case.json")
    tests = [f for f in parse_output(inp).errors if f.kind == "test"]
    assert len(tests) == 39
    first = tests[0]
    assert first.id == "test/normalize.test.ts > normalizeURL > .?foo=123"
    assert (first.error_type, first.message) == (
        "ReferenceError",
        "decodeQueryKeyTypo is not defined",
    )
    assert (first.file, first.line) == ("src/query.ts", 61)


def test_vitest_puts_an_unhandled_source_type_error_first_when_typecheck_finds_one() -> None:
    # ufo-4: `return ! object as T` (src/query.ts:74); `vitest run --typecheck` reports the type
    # error under "Unhandled Source Error", after 33 failing tests: it was not read at all
    _, inp = _load(REAL / "vitest" / "ufo-4" / "case.json")
    first = parse_output(inp).errors[0]
    assert (first.kind, first.error_type) == ("crash", "TypeCheckError")
    assert first.message.startswith("Conversion of type 'boolean' to type 'T' may be a mistake")
    assert (first.file, first.line) == ("src/query.ts", 74)


def test_ava_3_names_the_error_it_caught_and_where_it_was_thrown() -> None:
    # sindresorhus/slugify, ava 3: "✖ main Error thrown in test", then the error as util.inspect
    # ("ReferenceError {", "message: '…'") and "\u203a slugify (file://index.js:69:3)" pointers: none
    # of it was read, the digest was the output's tail (the 20 failures' list, then a cut)
    _, inp = _load(REAL / "ava" / "slugify-3" / "case.json")
    result = parse_output(inp)
    assert len(result.errors) == 20
    first = result.errors[0]
    assert (first.id, first.error_type, first.message) == (
        "main",
        "ReferenceError",
        "decamelizeTypo is not defined",
    )
    assert (first.file, first.line, first.frames[-1].function) == ("index.js", 69, "slugify")


def test_a_runners_killed_lines_are_reported_as_killed(tmp_path: Path) -> None:
    script = tmp_path / "test-all.sh"
    script.write_text(
        "#!/bin/sh\necho '[PASS] unit'\necho '[KILLED] integration (signal 9)'\nexit 3\n"
    )
    script.chmod(0o755)
    result = parse_output(_run([str(script)], tmp_path))
    assert result.killed == ("integration (signal 9)",)
    assert not result.counts.summary_seen


@pytest.mark.skipif(
    shutil.which("go") is None, reason="go is not installed (apt-get install golang-go)"
)
def test_go_test_json_events_give_the_same_failures_as_text(tmp_path: Path) -> None:
    (tmp_path / "go.mod").write_text("module example.com/m\n\ngo 1.18\n")
    (tmp_path / "m_test.go").write_text(
        'package m\n\nimport "testing"\n\nfunc TestA(t *testing.T) { t.Errorf("want %d", 2) }\n'
        "func TestB(t *testing.T) {}\n"
    )
    env = {**os.environ, "GOFLAGS": "-json", "GOPROXY": "off", "GOCACHE": str(tmp_path / ".cache")}
    result = run_command(["go", "test", "./..."], cwd=tmp_path, env=env, timeout_s=300)
    parsed = parse_output(
        ParserInput(
            argv=result.argv, stdout=result.stdout, stderr=result.stderr, root=str(tmp_path)
        )
    )
    assert [f.id for f in parsed.failures] == ["example.com/m.TestA"]
    assert (parsed.failures[0].file, parsed.failures[0].line, parsed.failures[0].message) == (
        "m_test.go",
        5,
        "want 2",
    )
    assert (parsed.counts.passed, parsed.counts.failed, parsed.counts.summary_seen) == (1, 1, True)


PARENT_LOGS = """package m

import "testing"

func TestSuite(t *testing.T) {
\tfor _, name := range []string{"a", "b", "c"} {
\t\tname := name
\t\tt.Run(name, func(t *testing.T) {
\t\t\tif name == "b" {
\t\t\t\tt.Errorf("%s: got 1, want 2", name)
\t\t\t}
\t\t})
\t}
\tt.Logf("passed %d; failed %d", 2, 1)
}

func TestOwn(t *testing.T) {
\tt.Run("x", func(t *testing.T) {})
\tt.Errorf("own: got 3")
}
"""


@pytest.mark.skipif(
    shutil.which("go") is None, reason="go is not installed (apt-get install golang-go)"
)
@pytest.mark.parametrize("flag", ["-v", "-json"])
def test_go_parent_that_logs_is_no_failing_test_when_its_subtest_failed(
    tmp_path: Path, flag: str
) -> None:
    # BurntSushi/toml's TestToml logs "valid: passed 218; failed 0" after its table of subtests
    (tmp_path / "go.mod").write_text("module example.com/m\n\ngo 1.18\n")
    (tmp_path / "m_test.go").write_text(PARENT_LOGS)
    env = {**os.environ, "GOFLAGS": flag, "GOPROXY": "off", "GOCACHE": str(tmp_path / ".cache")}
    result = run_command(["go", "test", "./..."], cwd=tmp_path, env=env, timeout_s=300)
    parsed = parse_output(
        ParserInput(
            argv=result.argv, stdout=result.stdout, stderr=result.stderr, root=str(tmp_path)
        )
    )
    assert {f.id: f.message for f in parsed.failures} == {
        "example.com/m.TestSuite/b": "b: got 1, want 2",
        "example.com/m.TestOwn": "own: got 3",
    }
    assert (parsed.counts.passed, parsed.counts.failed) == (3, 2)


@pytest.mark.parametrize("case", ["two_packages", "two_packages_verbose", "two_packages_json"])
def test_go_parent_test_is_a_parent_only_in_its_own_package_when_two_packages_share_a_name(
    case: str,
) -> None:
    _, inp = _load(OUTPUTS / "go" / f"{case}.json")
    result = go.parse(inp)
    assert {f.id: f.message for f in result.failures} == {
        "example.com/glcap/a.TestX/one": "a: got 1, want 2",
        "example.com/glcap/b.TestX": "b: got 1, want 2",
    }
    if case != "two_packages":  # a quiet go test prints no passed or skipped test
        assert (result.counts.passed, result.counts.failed, result.counts.skipped) == (3, 2, 2)


def test_mocha_tap_reporter_names_each_failing_test_its_assertion_and_the_test_line() -> None:
    # jshttp/range-parser, `mocha --reporter tap`: `not ok 13 <full title>` (no `-`), the message,
    # the diff, `AssertionError [ERR_ASSERTION]: …` and the stack indented 2; was read as no failure
    _, inp = _load(REAL / "mocha" / "range-parser-1" / "case.json")
    errors = parse_output(inp).errors
    assert len(errors) == 7
    first = errors[0]
    assert first.id == "parseRange(len, str) should return -1 for unsatisfiable range"
    assert (first.error_type, first.message) == (
        "AssertionError",
        "Expected values to be strictly equal",
    )
    assert (first.file, first.line) == ("test/range-parser.js", 65)


def test_tape_names_the_running_test_when_node_prints_an_error_in_brackets_no_stack() -> None:
    # fastify/secure-json-parse, `tape "test/*.test.js"`: `_parseTypo(…)` at index.js:133; node
    # prints the uncaught error as `[ReferenceError: _parseTypo is not defined]`, no stack
    _, inp = _load(REAL / "tape" / "secure-json-parse-2" / "case.json")
    (error,) = parse_output(inp).errors
    assert error.id == "parses object string"
    assert (error.error_type, error.message) == ("ReferenceError", "_parseTypo is not defined")
    assert (error.file, error.line) == ("index.js", 133)

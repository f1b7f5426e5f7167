"""Python-family parsers against real captured outputs (tests/resources/outputs/<tool>/<case>.json)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from case_files import project_root
from greenloop.parsers import ParseResult, ParserInput, installed, parse_output, parser_for
from greenloop.parsers import pytest_counts as pytest_parser
from greenloop.parsers.model import Failure, Kind
from greenloop.processes.process import ProcessResult
from greenloop.verify.classify import classify
from greenloop.verify.verdict import Verdict

# Catastrophic regex backtracking would take minutes: fail instead of hanging CI. Counted in this
# process's CPU seconds (time.process_time), not wall seconds: parsing runs in-process, and on 2 cores
# at load 30-44 the wall clock of these 10 MB lines reached 51-73 s; quiet, the slowest case takes 3.5 s.
HANG_GUARD_S = 30.0

OUTPUTS = Path(__file__).parent / "resources" / "outputs"
TOOLS = ("pytest", "unittest", "mypy", "ruff", "flake8", "pyright", "black")
OWN_PARSERS = ("pytest", "unittest", "mypy", "ruff", "flake8", "pyright", "black")
CASES = sorted(p for tool in TOOLS for p in (OUTPUTS / tool).glob("*.json"))


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def case(tool: str, name: str) -> dict[str, Any]:
    return load(OUTPUTS / tool / f"{name}.json")


def parse_case(data: dict[str, Any]) -> ParseResult:
    return parse_output(_input(data))


def _input(data: dict[str, Any]) -> ParserInput:
    return ParserInput(
        argv=tuple(data["argv"]),
        exit_code=data["exit_code"],
        stdout=data["stdout"],
        stderr=data["stderr"],
        root=data["cwd_placeholder"],
    )


def _names(f: Failure) -> set[str]:
    return {f.id, f.code, f.file}


def _verified(data: dict[str, Any], fact: str) -> Any:
    unverified = {item.split(":", 1)[0] for item in data.get("facts_unverified", [])}
    return None if fact in unverified else data["facts"].get(fact)


def test_the_corpus_covers_every_python_tool() -> None:
    assert {p.parent.name for p in CASES} == set(TOOLS)
    assert len([p for p in CASES if p.parent.name == "pytest"]) >= 20


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_parser_keeps_the_ground_truth_facts_of_a_real_output(path: Path) -> None:
    data = load(path)
    result = parse_case(data)
    errors = result.errors
    ids = _verified(data, "failing_ids") or []
    for fid in ids:
        assert any(fid in _names(f) for f in errors), (fid, [f.id for f in errors])
    target = [f for f in result.failures if ids and ids[0] in _names(f)] or list(result.failures)
    error_type = _verified(data, "error_type")
    if not target:
        assert not ids
        assert error_type is None
        return
    if error_type:  # the facts name a category loosely ("crashed", "usage"): a substring
        kinds = [f"{f.error_type} {f.code}".lower() for f in target]
        assert any(error_type.lower() in k for k in kinds), kinds
    message = _verified(data, "message")
    if message:
        message = message.replace('\\"', '"')  # pyright/json's fact keeps JSON's escaping
        texts = [" ".join((f.message, *f.detail)) for f in target]
        assert any(message in t for t in texts), texts
    frame = _verified(data, "frame")
    if frame:
        places = {f"{x.file}:{x.line}" for f in target for x in f.frames}
        places |= {f"{f.file}:{f.line}" for f in target}
        assert frame in places, places


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_parser_reports_the_failure_count_and_kills_of_a_real_output(path: Path) -> None:
    data = load(path)
    result = parse_case(data)
    count = _verified(data, "count_failed")
    killed = _verified(data, "killed")
    if killed and data["exit_code"] >= 0:
        assert result.killed
    elif killed:  # the process itself died: the run must read as incomplete
        assert result.killed or not result.counts.summary_seen
    elif killed is False:
        assert not result.killed
    if count is None or killed:
        return
    distinct = len({f.file for f in result.errors})
    assert count in (result.counts.failing, len(result.errors), distinct), result.counts


def test_pytest_segfault_is_incomplete_and_names_the_killed_test() -> None:
    result = parse_case(case("pytest", "segfault"))
    assert not result.counts.summary_seen
    assert result.killed == ("tests/test_native.py::test_crashes",)
    crash = next(f for f in result.failures if f.kind is Kind.CRASH)
    assert crash.error_type == "Segmentation fault"
    assert crash.frames[-1].function == "test_crashes"  # oldest first: the innermost frame last


def test_pytest_xdist_worker_crash_puts_the_test_in_killed() -> None:
    result = parse_case(case("pytest", "xdist_worker_crash"))
    assert result.killed == ("tests/test_crash.py::test_killed",)
    assert result.counts.summary_seen
    assert result.counts.failed == 1


def test_pytest_short_summary_supplies_ids_when_tracebacks_are_off() -> None:
    result = parse_case(case("pytest", "tb_no"))
    assert [f.id for f in result.errors] == [
        "tests/test_mathx.py::test_mean_empty",
        "tests/test_mathx.py::test_mean_float",
        "tests/test_mathx.py::test_mean_neg",
    ]
    assert result.errors[1].error_type == "AssertionError"


def test_pytest_assertion_diff_lands_in_detail() -> None:
    result = parse_case(case("pytest", "assert_dict_diff"))
    first = result.errors[0]
    assert first.message.startswith("assert {'host'")
    assert "Differing items:" in first.detail
    assert "{'port': 8080} != {'port': 9090}" in first.detail


def test_pytest_fixture_error_at_setup_is_a_test_failure_counted_in_errors() -> None:
    result = parse_case(case("pytest", "fixture_error"))
    (failure,) = result.errors
    assert failure.kind is Kind.TEST
    assert failure.id == "tests/test_repo.py::test_insert"
    assert result.counts.errors == 1
    assert result.counts.failed == 0


def test_pytest_collection_error_is_a_build_failure_with_the_module_frame() -> None:
    result = parse_case(case("pytest", "syntax_error"))
    (failure,) = result.errors
    assert failure.kind is Kind.BUILD
    assert failure.error_type == "SyntaxError"
    assert (failure.file, failure.line) == ("src/pkg/broken.py", 3)


def test_pytest_quiet_summary_line_without_rules_is_seen() -> None:
    counts = pytest_parser.parse_counts("F.\n1 failed, 1 passed in 0.02s\n")
    assert counts.summary_seen
    assert counts.failed == 1
    assert counts.passed == 1


def test_pytest_no_tests_ran_is_a_summary_with_nothing_run() -> None:
    result = parse_case(case("pytest", "no_tests"))
    assert result.counts.summary_seen
    assert result.counts.ran == 0
    assert not result.errors


def test_pytest_counts_every_session_when_tox_runs_pytest_several_times() -> None:
    # natsort's tox env runs pytest three times (README doctests: 1, --doctest-modules: 14, the
    # suite: 337); the last summary alone said 337 passed where 352 tests passed.
    data = load(OUTPUTS.parent / "real" / "tox" / "natsort-0" / "case.json")
    result = parse_case(data)
    assert (result.counts.passed, result.counts.failed) == (352, 0)
    assert result.counts.collected == 352


def test_installed_copy_frames_name_the_repository_file_when_tox_installed_the_package() -> None:
    # natsort's tox env installs the package (not editable): a SyntaxError seeded in natsort/utils.py
    # surfaces in a README doctest through .tox/py311/lib/python3.11/site-packages/natsort/utils.py,
    # a library path the digest hid, leaving only "at README.rst:69".
    data = load(OUTPUTS.parent / "real" / "tox" / "natsort-5" / "case.json")
    before = parse_case(data).failures[0]
    assert ("natsort/utils.py", 428) not in {(f.file, f.line) for f in before.frames}
    with project_root(data) as root:  # natsort's own files, as they were at the capture
        assert root is not None
        after = installed.own_copies(parse_case(data), root, {"natsort", "tests", "docs"})
        assert ("natsort/utils.py", 428) in {(f.file, f.line) for f in after.failures[0].frames}
        assert installed.own_copies(parse_case(data), root, {"tests"}).failures[0] == before


def test_pytest_exception_group_keeps_the_first_sub_exceptions_frames_and_lists_each_one() -> None:
    # bidict's hypothesis state machine (under xdist) raised "Hypothesis found 2 distinct failures"
    # drawn with | borders: no frame was read, the AssertionError at bidict/_base.py:423 was lost.
    data = load(OUTPUTS.parent / "real" / "pytest" / "bidict-1" / "case.json")
    group = next(f for f in parse_case(data).failures if f.id.endswith("::runTest"))
    assert (group.error_type, group.message) == (
        "ExceptionGroup",
        "Hypothesis found 2 distinct failures. (2 sub-exceptions)",
    )
    assert (group.frames[-1].file, group.frames[-1].line) == ("bidict/_base.py", 423)
    assert group.detail[0] == "sub-exception 1: AssertionError (at bidict/_base.py:423)"
    assert group.detail[1].startswith("sub-exception 2: AssertionError: assert <class")


def test_pytest_hypothesis_note_under_a_bare_assertion_is_detail_not_the_message() -> None:
    data = load(OUTPUTS.parent / "real" / "pytest" / "bidict-1" / "case.json")
    first = parse_case(data).failures[0]
    assert first.id == "tests/test_bidict.py::test_views_agree_with_iteration_order"
    assert (first.error_type, first.message) == ("AssertionError", "")
    assert first.detail[1] == "Failing test case: test_views_agree_with_iteration_order("


def test_pytest_hypothesis_explanations_of_every_failure_lead_the_first_failures_detail() -> None:
    # the seeded line, bidict/_base.py:419, is named only in the state machine's (a later failure)
    # "These lines were always and only run by failing test cases" list
    data = load(OUTPUTS.parent / "real" / "pytest" / "bidict-1" / "case.json")
    first = parse_case(data).failures[0]
    assert first.detail[0].startswith("hypothesis: only failing examples ran bidict/_base.py:421, ")
    assert "419" in first.detail[0].split(";")[0]


def test_installed_copy_errors_are_the_projects_not_the_environments_when_nox_installed_it() -> (
    None
):
    # installer's nox session installs the package into .nox: a SyntaxError seeded in
    # src/installer/utils.py broke 7 test modules "inside installed dependencies" -> ENVIRONMENT
    # FAILURE, never sent to the agent.
    data = load(OUTPUTS.parent / "real" / "nox" / "installer-5" / "case.json")
    run = ProcessResult(
        argv=tuple(data["argv"]), exit_code=data["exit_code"], stdout=data["stdout"],
        stderr=data["stderr"], merged=data["stdout"] + data["stderr"],
    )  # fmt: skip
    modules = frozenset(data["repo_modules"])
    parsed = parse_case(data)
    assert classify(run, parsed, command="nox", repo_modules=modules).verdict is Verdict.ENV_FAILURE
    with project_root(data) as root:  # installer's own files, as they were at the capture
        assert root is not None
        own = installed.own_copies(parsed, root, modules)
    assert classify(run, own, command="nox", repo_modules=modules).verdict is Verdict.FAILED
    assert own.failures[0].file.endswith("installer/utils.py")


def test_pytest_counts_the_last_session_when_a_banner_sits_inside_another_run() -> None:
    inner = "==== test session starts ====\ncollected 1 item\n\n==== 1 failed in 0.01s ====\n"
    outer = f"==== test session starts ====\ncollected 3 items\n{inner}\n==== 1 failed, 2 passed in 0.2s ===="
    counts = pytest_parser.parse_counts(outer)
    assert (counts.passed, counts.failed, counts.collected) == (2, 1, 3)


def _django_filter(n: int) -> ParseResult:
    return parse_case(
        load(OUTPUTS.parent / "real" / "django-test" / f"django-filter-{n}" / "case.json")
    )


def test_unittest_reads_xmlrunners_timed_fail_headers_under_djangos_test_runner() -> None:
    # `runtests.py --testrunner xmlrunner...XMLTestRunner` prints "FAIL [0.004s]: name (id)": no
    # block was read, the digest fell back to the raw output window.
    failures = _django_filter(1).failures
    assert len(failures) == 6
    assert (
        failures[0].id == "tests.test_filters.NumericRangeFilterTests.test_field_with_lookup_expr"
    )
    assert ("tests/test_filters.py", 954) in {(f.file, f.line) for f in failures[0].frames}


def test_unittest_multi_line_message_lines_that_look_like_exceptions_stay_detail() -> None:
    # mock's "AssertionError: expected call not found." goes on with "Expected: filter(...)",
    # which was read as an exception of type Expected.
    first = _django_filter(1).failures[0]
    assert (first.error_type, first.message) == ("AssertionError", "expected call not found.")
    assert first.detail[:2] == (
        "Expected: filter(None__overlap=(20, 30))",
        "Actual: filter(None__startswith=20)",
    )


def test_unittest_module_that_failed_to_import_keeps_the_cause_and_says_it_did_not_load() -> None:
    first = _django_filter(3).failures[0]
    assert first.id == "unittest.loader._FailedTest.tests.rest_framework.test_backends"
    assert (first.error_type, first.message) == (
        "AttributeError",
        "'NoneType' object has no attribute 'items'",
    )
    assert first.detail[0] == (
        "ImportError: Failed to import test module: tests.rest_framework.test_backends"
    )


def test_unittest_ids_are_dotted_paths_with_frames_and_counts() -> None:
    result = parse_case(case("unittest", "failure_and_error"))
    assert {f.id for f in result.errors} == {
        "tests.test_calc.CalcTest.test_add",
        "tests.test_calc.CalcTest.test_div",
        "tests.test_calc.CalcTest.test_list",
    }
    div = next(f for f in result.errors if f.id.endswith("test_div"))
    assert div.error_type == "ZeroDivisionError"
    assert (div.file, div.line) == ("calc.py", 6)
    assert result.counts.summary_seen
    assert result.counts.failed == 2
    assert result.counts.errors == 1
    assert result.counts.passed == 1


def test_mypy_notes_join_the_previous_error_and_syntax_is_a_build_error() -> None:
    result = parse_case(case("mypy", "errors_with_notes"))
    arg = next(f for f in result.errors if f.id == "src/app/service.py:13 arg-type")
    assert arg.kind is Kind.TYPE
    assert arg.error_type == "error"
    assert any("invariant" in d for d in arg.detail)
    assert result.counts.failed == 5
    assert result.counts.summary_seen
    syntax = parse_case(case("mypy", "syntax_error")).errors[0]
    assert syntax.kind is Kind.BUILD
    assert syntax.code == "syntax"


def test_ruff_concise_full_and_json_agree() -> None:
    def keys(name: str) -> list[tuple[str, int | None, str]]:
        return sorted((f.file, f.line, f.code) for f in parse_case(case("ruff", name)).errors)

    assert keys("check_concise") == keys("check_full") == keys("check_json")
    assert len(keys("check_concise")) == 9
    # RUFF_OUTPUT_FORMAT=json is what `greenloop check -- ruff check` runs: no "Found 9 errors"
    for name in ("check_concise", "check_full", "check_json"):
        counts = parse_case(case("ruff", name)).counts
        assert (counts.failed, counts.summary_seen) == (9, True), name


def test_format_checkers_report_one_format_failure_per_file() -> None:
    for tool, name in (("ruff", "format_check"), ("ruff", "format_diff"), ("black", "check")):
        result = parse_case(case(tool, name))
        assert sorted(f.file for f in result.errors) == ["pkg/a.py", "pkg/c.py"], name
        assert all(f.kind is Kind.FORMAT for f in result.errors)


def test_pyright_text_and_json_find_the_same_rules() -> None:
    text = parse_case(case("pyright", "errors"))
    data = parse_case(case("pyright", "json"))
    assert [(f.file, f.line, f.code) for f in text.errors] == [
        (f.file, f.line, f.code) for f in data.errors
    ]
    assert text.errors[0].detail == ('"str" is not assignable to "int"',)


# -- parsers never raise ---------------------------------------------------------------------------

ALL_TEXTS = [load(p)["stdout"] + load(p)["stderr"] for p in CASES]


def _run_all(stdout: str, stderr: str = "") -> None:
    for tool in OWN_PARSERS:
        result = parser_for(tool)(
            ParserInput(argv=(tool,), stdout=stdout, stderr=stderr, root="/tmp/x")
        )
        assert result.tool == tool


@settings(max_examples=150, deadline=None)
@given(st.text())
def test_parsers_never_raise_on_random_text(text: str) -> None:
    _run_all(text, text[::-1])


@settings(max_examples=150, deadline=None)
@given(st.binary())
def test_parsers_never_raise_on_random_bytes(raw: bytes) -> None:
    _run_all(raw.decode("utf-8", errors="replace"))


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(ALL_TEXTS), st.floats(min_value=0, max_value=1))
def test_parsers_never_raise_on_truncated_real_output(text: str, cut: float) -> None:
    _run_all(text[: int(len(text) * cut)])
    _run_all(text[int(len(text) * cut) :])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([line for t in ALL_TEXTS for line in t.split("\n")]), max_size=80))
def test_parsers_never_raise_on_shuffled_real_lines(lines: list[str]) -> None:
    _run_all("\n".join(lines))


def test_parsers_finish_fast_on_a_10_mb_single_line() -> None:
    for line in ("x" * 10_000_000, "E   " + "a: " * 3_000_000, "_ " * 5_000_000):
        start = time.process_time()
        _run_all(line)
        assert time.process_time() - start < HANG_GUARD_S  # speed is measured in bench/, not here


def test_pytest_parses_a_50_mb_log_in_well_under_seconds() -> None:
    out = case("pytest", "deep_exception")["stdout"]
    rule = "=" * 35 + " FAILURES " + "=" * 35 + "\n"
    head, rest = out.split(rule)
    block, tail = rest.split("=" * 27 + " short test summary info")
    text = (
        head
        + rule
        + block * (50_000_000 // len(block))
        + "=" * 27
        + " short test summary info"
        + tail
    )
    start = time.process_time()
    result = parser_for("pytest")(ParserInput(argv=("pytest",), stdout=text, root="/tmp/glcap/x"))
    elapsed = time.process_time() - start
    assert result.errors[0].id == "tests/test_pipeline.py::test_run_scales_values"
    assert result.counts.summary_seen
    assert elapsed < HANG_GUARD_S  # a backtracking guard; bench/digest.py measures speed


def test_pytest_coverage_gate_is_one_error_naming_the_files_under_100_percent_and_their_lines() -> (
    None
):
    data = load(OUTPUTS / "pytest" / "coverage_gate.json")  # every test passed, exit 1
    result = parse_case(data)
    (gate,) = result.errors
    assert gate.message == "Required test coverage of 90% not reached. Total coverage: 75.00%"
    assert (gate.file, gate.line) == ("src/pkg/calc.py", 6)
    assert gate.detail == ("src/pkg/calc.py: 75%, missing 6",)  # not __init__.py at 100 %
    assert result.counts.passed == 1
    run = ProcessResult(
        argv=tuple(data["argv"]),
        exit_code=1,
        stdout=data["stdout"],
        stderr=data["stderr"],
        merged=data["stdout"] + data["stderr"],
    )
    assert classify(run, result, command="pytest").verdict is Verdict.FAILED


def test_pytest_timeouts_thread_method_is_the_hung_test_failing_where_it_hangs() -> None:
    # the run ends inside the test (stacks, os._exit): the test hung, nothing killed it from outside
    data = load(OUTPUTS / "pytest" / "timeout_thread.json")
    result = parse_case(data)
    (hung,) = result.errors
    assert hung.id == "tests/test_poll.py::test_ready_never"
    assert (hung.file, hung.line) == ("src/pkg/poll.py", 6)
    assert hung.message.startswith("Timeout (>2.0s) from pytest-timeout")
    assert [f.function for f in hung.frames] == ["test_ready_never", "wait_ready"]
    run = ProcessResult(
        argv=tuple(data["argv"]),
        exit_code=data["exit_code"],
        stdout=data["stdout"],
        stderr=data["stderr"],
        merged=data["stdout"] + data["stderr"],
    )
    assert classify(run, result, command="pytest").verdict is Verdict.FAILED


def test_a_doctest_diff_keeps_the_example_and_the_diff_s_first_lines() -> None:
    # tabulate's README tables: over two lines of output, pytest's default --doctest-report udiff
    # prints "Differences (unified diff ...)" where Expected/Got would be; the digest showed the
    # diff's last 4 lines only, without the example that printed them
    real = Path(__file__).parent / "resources" / "real" / "pytest" / "tabulate-2"
    first = parse_case(load(real / "case.json")).errors[0]
    assert (first.id, first.error_type) == ("README.md::README.md", "DocTestFailure")
    assert first.message == "Differences (unified diff with -expected +actual)"
    assert first.detail[0] == '874 >>> print(tabulate(table, headers, tablefmt="plain"))'
    assert [line.strip() for line in first.detail[1:4]] == [
        "@@ -1,5 +1,5 @@",
        "-item      qty",
        "-name",
    ]

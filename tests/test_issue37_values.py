"""Real outputs of projects nobody here wrote, read as ``greenloop check`` reads them: where a Go
failure is, long compared values, values the message already states, hangs and retries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from greenloop.detect.stages import Cascade, Stage
from greenloop.digest import Digest, build_digest
from greenloop.parsers import ParserInput, parse_output
from greenloop.parsers.model import ParseResult
from greenloop.processes.process import ProcessResult
from greenloop.report.render import check_json, render_github
from greenloop.verify.cascade import CheckResult, StageRun
from greenloop.verify.classify import classify

REAL = Path(__file__).parent / "resources" / "real"


def _case(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((REAL / name / "case.json").read_text(encoding="utf-8"))
    return data


def _parsed(data: dict[str, Any]) -> ParseResult:
    argv = tuple(data["argv"])
    return parse_output(
        ParserInput(
            argv=argv, exit_code=data["exit_code"], stdout=data["stdout"], stderr=data["stderr"],
            merged=data["stdout"] + data["stderr"], root=data["cwd_placeholder"],
        )
    )  # fmt: skip


def _checked(data: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """``greenloop check``'s JSON and digest text for a captured run."""
    checked, digest = _check(data)
    return check_json(checked, digest), digest.text


def _check(data: dict[str, Any]) -> tuple[CheckResult, Digest]:
    argv = tuple(data["argv"])
    code = data["exit_code"]
    result = ProcessResult(
        argv=argv, exit_code=128 - code if code < 0 else code, signal=-code if code < 0 else None,
        timed_out=bool(data.get("timed_out")), duration_s=1.0, stdout=data["stdout"],
        stderr=data["stderr"], merged=data["stdout"] + data["stderr"],
    )  # fmt: skip
    parsed = _parsed(data)
    stage = Stage(name="verify", command=argv, why="test")
    verdict = classify(result, parsed, command=stage.display, repo_modules=frozenset(), root="")
    run = StageRun(stage=stage, result=result, parsed=parsed, classification=verdict)
    checked = CheckResult(
        cascade=Cascade(stages=(stage,), source="test"), runs=(run,),
        verdict=verdict.verdict, duration_s=1.0,
    )  # fmt: skip
    return checked, build_digest(checked, root=data["cwd_placeholder"], budget=2000)


def test_go_failure_in_a_sub_package_is_located_in_its_folder_not_the_roots_file_of_that_name() -> (
    None
):
    # golang-lru: simplelru/lru_test.go:60 fails; the root has an lru_test.go of its own
    for runner in ("go-test", "go-test-v"):
        data = _case(f"{runner}/golang-lru-1")
        (failure,) = _parsed(data).failures
        assert (failure.file, failure.line) == ("simplelru/lru_test.go", 60)
        out, text = _checked(data)
        assert out["failures"][0]["file"] == "simplelru/lru_test.go"
        assert "at simplelru/lru_test.go:60" in text
        assert " lru_test.go:60" not in text.replace("simplelru/lru_test.go:60", "")
        assert render_github(*_check(data)).startswith(
            "::error file=simplelru/lru_test.go,line=60,"
        )


def test_go_failures_in_the_root_and_a_sub_package_keep_each_their_own_file() -> None:
    data = _case("go-test-v/golang-lru-2")
    files = {(f.id.rpartition(".")[0], f.file) for f in _parsed(data).failures}
    assert ("github.com/hashicorp/golang-lru/v2", "lru_test.go") in files
    assert ("github.com/hashicorp/golang-lru/v2/simplelru", "simplelru/lru_test.go") in files


def test_node_test_names_holding_a_hash_are_read_unescaped_from_tap() -> None:
    # node's TAP writes `nGram(1) \# unigram`; the test is named `nGram(1) # unigram`
    data = _case("node-test/n-gram-1")
    ids = [f.id for f in _parsed(data).failures]
    assert ids[:3] == data["facts"]["failing_ids"][:3]
    assert ids[0] == "nGram(1) # unigram"


def test_go_long_expected_and_got_values_are_cut_around_where_they_differ() -> None:
    # mapstructure: `Decode() expected: %#v, got: %#v` of two 400-character maps; the expected one
    # holds "omittable-int":1, the one it got does not. Cut in the middle, both read the same
    data = _case("go-test/mapstructure-1")
    out, text = _checked(data)
    line = next(ln for ln in text.splitlines() if "KeepNonEmptyValues" in ln)
    expected, _, got = line.partition(", got: ")
    assert 'omittable-int":1' in expected
    assert 'omittable-int"' not in got
    assert 'omittable-map"' in got
    (failure,) = [f for f in out["failures"] if f["id"].endswith("KeepNonEmptyValues")]
    wanted, _, gotten = failure["message"].partition(", got: ")
    assert '"omittable-int":1' in wanted
    assert '"omittable-int"' not in gotten


def test_a_vitest_test_retried_twice_is_one_failed_test_not_three() -> None:
    # destr under `vitest run --retry=2`: 8 tests failed every try; vitest lists each try
    data = _case("vitest/destr-1")
    parsed = _parsed(data)
    ids = [f.id for f in parsed.failures]
    assert len(ids) == len(set(ids)) == 8 == parsed.counts.failed
    _, text = _checked(data)
    assert "OTHER FAILURES (7)" in text
    assert "\N{MULTIPLICATION SIGN}3" not in text


def test_a_compared_value_is_kept_when_the_message_merely_holds_its_letters() -> None:
    # clsx under uvu: `Expected values to be strictly equal`, then `++a·b (Expected)`, `--b
    # (Actual)`: the actual `b` is no word of the message, so it is said
    _, text = _checked(_case("uvu/clsx-1"))
    line = next(ln for ln in text.splitlines() if "supports heterogenous arguments" in ln)
    assert "Expected: a·b, Actual: b" in line


def test_a_compared_value_the_message_states_as_a_whole_word_is_not_said_twice() -> None:
    from greenloop.digest.values import states

    assert states("expected 10 to be 1", "1")
    assert not states("expected 10 to equal 2", "1")
    assert not states("Expected values to be strictly equal", "b")


def _output(name: str) -> dict[str, Any]:
    path = Path(__file__).parent / "resources" / "outputs" / f"{name}.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def test_node_assert_failures_with_one_generic_message_keep_each_expression_once() -> None:
    # assert(isEven(2)), assert.ok(isEven(0)), assert(!isEven(3)): node says "The expression
    # evaluated to a falsy value" for each; only the expression tells them apart
    for case in ("node-test/assert_expr_tap", "node-test/assert_expr_spec"):
        _, text = _checked(_output(case))
        for expression in ("assert(isEven(2))", "assert.ok(isEven(0))", "assert(!isEven(3))"):
            assert text.count(expression) == 1, (case, expression, text)
        assert "same AssertionError" not in text


def test_mocha_assert_ok_failures_on_different_expressions_are_not_folded_into_one() -> None:
    _, text = _checked(_case("mocha/fresh-1"))
    assert "assert.ok(!fresh(reqHeaders, resHeaders))" in text
    assert "assert.ok(fresh(reqHeaders, resHeaders))" in text


def test_a_tape_run_killed_at_the_time_limit_names_the_test_it_was_inside() -> None:
    # n-gram 2.0.2 with `index < 1` flipped: bigrams([]) loops forever; tape printed the heading
    # `# nGram(2) # bigram`, then its failed assertions, then nothing
    _, text = _checked(_case("tape/n-gram-tape-1"))
    assert "It was running nGram(2) # bigram when it was killed." in text.splitlines()[0]


def test_a_go_binary_past_its_timeout_fails_the_tests_it_was_running_not_one_named_panic() -> None:
    # mapstructure, decodeSlice looping forever; go 1.19 prints `panic: test timed out after
    # 30s` and a goroutine dump. With -v the tests started and never ended are the ones
    data = _case("go-test-v/mapstructure-4")
    failures = _parsed(data).failures
    names = [f.id.rpartition(".")[2] for f in failures]
    assert names == data["facts"]["failing_ids"]
    assert all(f.message == "test timed out after 30s" for f in failures)
    # the place it hung: the looping function, from the goroutine that ran the test
    inner = next(f for f in reversed(failures[0].frames) if not f.file.startswith("/"))
    assert (inner.file, inner.line) == ("mapstructure.go", 1136)
    assert not any(f.function == "main.main" for f in failures[0].frames)
    # a quiet run has the goroutine dump only: the test function there names the test
    (quiet,) = _parsed(_case("go-test/mapstructure-4")).failures
    assert quiet.id == "github.com/mitchellh/mapstructure.TestStructToMapHookFuncTabled"


def test_rust_assert_eq_of_long_values_keeps_where_left_and_right_differ() -> None:
    # two 690-character Debug lines alike but for `port: 8081` / `port: 8080` past character 500
    _, text = _checked(_output("cargo/test_assert_eq_long"))
    left = next(ln for ln in text.splitlines() if ln.strip().startswith("left:"))
    right = next(ln for ln in text.splitlines() if ln.strip().startswith("right:"))
    assert "port: 8081" in left
    assert "port: 8080" in right
    assert len(left) < 160


def test_a_go_message_of_one_word_goes_on_with_the_value_printed_below_it() -> None:
    # pflag: t.Errorf("Expected \n%s\nGot\n%s", ...) prints `printusage_test.go:72: Expected`
    # and the usage text on the lines below; "Expected" alone says nothing
    failures = {f.id.rpartition(".")[2]: f for f in _parsed(_case("go-test-v/pflag-1")).failures}
    message = failures["TestPrintUsage_2"].message
    assert message.startswith("Expected --long-form[=true|false]")
    assert failures["TestPrintDefaults"].message.startswith("--- Got: --A[=true|false]")
    assert failures["TestBoolFuncUsage/regular_func_flag"].message == (
        "unexpected generated usage message"
    )


def test_the_affected_step_says_why_it_used_the_import_graph_without_nested_parentheses(
    tmp_path: Path,
) -> None:
    # every iteration line read `affected: 2 test files of 2 (no map yet (recorded on a green
    # full run); import graph)`
    from greenloop.verify import affected

    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (tmp_path / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n    pass\n")
    files = ["calc.py", "test_calc.py"]
    store = tmp_path / "affected.json"
    choice = affected.choose(store, tmp_path, files=files, changed=["calc.py"], command="pytest")
    assert choice.tests == ("test_calc.py",)
    assert (
        choice.reason
        == "1 test file of 1 by the import graph: no map yet (recorded on a green full run)"
    )


def test_vitest_expected_and_received_strings_keep_where_they_differ() -> None:
    # two 680-character strings alike but for `port=8080` / `port=8081`
    _, text = _checked(_output("vitest/long_string"))
    expected = next(ln for ln in text.splitlines() if ln.strip().startswith("Expected:"))
    received = next(ln for ln in text.splitlines() if ln.strip().startswith("Received:"))
    assert "port=8080" in expected
    assert "port=8081" in received


def test_node_assert_thrown_out_of_a_tape_test_keeps_its_expression_and_place() -> None:
    # node's uncaught block: `AssertionError [ERR_ASSERTION]: The expression evaluated to a falsy
    # value:`, a blank line, `  assert(isEven(2))`, a blank line, the stack
    _, text = _checked(_output("tape/node_assert"))
    assert "assert(isEven(2))" in text
    assert "at test.js:9" in text


def test_a_go_test_run_killed_at_the_time_limit_names_the_test_it_was_inside() -> None:
    # go test -v: `=== RUN TestOddStart` and nothing after it (Countdown(3) never reaches zero)
    _, text = _checked(_output("go/test_verbose_killed"))
    assert "It was running TestOddStart when it was killed." in text.splitlines()[0]


def test_vitest_retries_a_pass_on_a_retry_is_no_failure_a_failure_counts_once() -> None:
    # `vitest run --retry=2`: `✓ passes on its second try (retry x1)`, `always fails (retry x2)` failed
    # listed three times under Failed Tests
    parsed = _parsed(_output("vitest/retry"))
    assert [f.id for f in parsed.failures] == ["test/retry.test.js > always fails"]
    assert (parsed.counts.passed, parsed.counts.failed) == (2, 1)

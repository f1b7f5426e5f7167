"""The digest over real captured outputs: shape, budget, anchor, framing, signatures, redaction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from greenloop.detect.stages import Cascade, Stage
from greenloop.digest import History, build_digest, estimate_tokens, normalize
from greenloop.digest.first import MAX_DETAIL, detail_lines
from greenloop.parsers import ParserInput, parse_output
from greenloop.processes.process import ProcessResult
from greenloop.redact import redact
from greenloop.report.render import render_github
from greenloop.verify.cascade import CheckResult, StageRun
from greenloop.verify.classify import classify

OUTPUTS = Path(__file__).parent / "resources" / "outputs"
REAL = Path(__file__).parent / "resources" / "real"  # the conformance corpus: <runner>/<case>/


def load(tool: str, case: str, **changes: str) -> tuple[CheckResult, str]:
    path = OUTPUTS / tool / f"{case}.json"
    data = json.loads((path if path.exists() else REAL / tool / case / "case.json").read_text())
    data.update(changes)
    argv = tuple(data["argv"]) if isinstance(data["argv"], list) else ("sh", "-c", data["argv"])
    merged = data["stdout"] + data["stderr"]
    run = ProcessResult(
        argv=argv,
        exit_code=data["exit_code"],
        stdout=data["stdout"],
        stderr=data["stderr"],
        merged=merged,
    )
    parsed = parse_output(
        ParserInput(
            argv=argv,
            exit_code=run.exit_code,
            stdout=run.stdout,
            stderr=run.stderr,
            merged=merged,
            root=data["cwd_placeholder"],
        )
    )
    stage = Stage(name="test", command=argv, why="captured")
    verdict = classify(
        run, parsed, command=stage.display, repo_modules={"src", "tests", "pkg", "calc"}
    )
    stage_run = StageRun(stage=stage, result=run, parsed=parsed, classification=verdict)
    result = CheckResult(
        cascade=Cascade(stages=(stage,), source="test"),
        runs=(stage_run,),
        verdict=verdict.verdict,
        duration_s=1.5,
    )
    return result, data["cwd_placeholder"]


def test_digest_of_a_deep_exception_names_the_test_the_error_and_the_deepest_project_frame() -> (
    None
):
    result, root = load("pytest", "deep_exception")
    digest = build_digest(result, root=root)
    lines = digest.text.splitlines()
    assert lines[0].startswith("The verifier failed (exit 1")
    assert "FIRST FAILING TEST: tests/test_pipeline.py::test_run_scales_values" in digest.text
    assert "TypeError: unsupported operand type(s) for +: 'int' and 'str'" in digest.text
    assert "at src/pkg/c.py:6 in scale" in digest.text
    assert "please" not in digest.text.lower()


def test_forty_failure_cascade_stays_far_below_the_budget_and_clusters_the_rest() -> None:
    result, root = load("pytest", "cascade_40")
    digest = build_digest(result, root=root)
    assert digest.tokens <= 2000
    assert "OTHER FAILURES (39)" in digest.text
    assert "more" in digest.text


@pytest.mark.parametrize("budget", [150, 300, 700])
def test_digest_never_exceeds_a_small_budget_and_keeps_the_header(budget: int) -> None:
    result, root = load("pytest", "cascade_40")
    digest = build_digest(result, root=root, budget=budget)
    assert estimate_tokens(digest.text) <= budget
    assert digest.text.startswith("The verifier failed")


def test_anchor_says_the_failing_frame_lies_inside_the_last_edit() -> None:
    result, root = load("pytest", "deep_exception")
    diff = "--- a/src/pkg/c.py\n+++ b/src/pkg/c.py\n@@ -5,1 +5,2 @@\n-x\n+y\n+z\n"
    digest = build_digest(result, root=root, diff=diff)
    assert "YOUR LAST EDIT touched src/pkg/c.py:5-6." in digest.text
    assert "The failure at src/pkg/c.py:6 lies inside that change." in digest.text


def test_progress_framing_counts_fixed_and_new_failures() -> None:
    result, root = load("pytest", "deep_exception")
    history = History(
        previous_failing=(
            "tests/test_pipeline.py::test_run_scales_values",
            "tests/test_x.py::test_gone",
        )
    )
    digest = build_digest(result, root=root, history=history)
    assert "1 of 2 previously failing now pass; 1 still fails." in digest.text


def test_repeat_note_names_the_count_and_the_files_earlier_attempts_changed() -> None:
    result, root = load("pytest", "deep_exception")
    digest = build_digest(
        result,
        root=root,
        history=History(times_seen=3, earlier_files=("src/pkg/a.py", "src/pkg/b.py")),
    )
    assert (
        "This is the 3rd time this error appears; earlier attempts changed src/pkg/a.py, src/pkg/b.py."
        in digest.text
    )


def test_repeat_note_after_one_edit_says_the_error_predates_it_not_that_nothing_changed() -> None:
    # the same error at the baseline and after the first edit: no earlier *attempt* saw it
    result, root = load("pytest", "deep_exception")
    history = History(times_seen=2, only_before_edits=True)
    digest = build_digest(result, root=root, history=history)
    assert (
        "This is the 2nd time this error appears; it was there before the first edit, and the "
        "last edit did not change it." in digest.text
    )
    assert "earlier attempts changed no files" not in digest.text


def test_signature_ignores_durations_addresses_and_tmp_paths() -> None:
    a = normalize("boom at 0x7f3a2b in /tmp/pytest-of-root/x/test.py after 2.31s pid 4242")
    b = normalize("boom at 0x1111 in /tmp/other/y/test.py after 0.02s pid 17")
    assert a == b


def test_same_output_with_different_timings_has_the_same_signature() -> None:
    first, root = load("pytest", "deep_exception")
    data = json.loads((OUTPUTS / "pytest" / "deep_exception.json").read_text())
    second, _ = load("pytest", "deep_exception", stdout=data["stdout"].replace(" in 0.", " in 9."))
    assert build_digest(first, root=root).signature == build_digest(second, root=root).signature


def test_secrets_in_output_are_redacted() -> None:
    text = "token ghp_abcdefghijklmnopqrstuvwxyz0123456789 and sk-proj-ABCDEFGHIJKLMNOPQRSTUV and AKIAABCDEFGHIJKLMNOP"
    out = redact(text, secrets=("hunter2-very-secret",)) + redact(
        "pw=hunter2-very-secret", secrets=("hunter2-very-secret",)
    )
    assert "ghp_" not in out
    assert "sk-proj" not in out
    assert "AKIA" not in out
    assert "hunter2" not in out
    assert out.count("[REDACTED]") == 4


def test_environment_failure_digest_is_for_the_human_not_the_agent() -> None:
    result, root = load("pytest", "missing_third_party")
    digest = build_digest(result, root=root)
    assert not digest.for_agent
    assert digest.text.startswith("ENVIRONMENT FAILURE")
    assert "pip install psycopg2" in digest.text
    assert "Needed by: src/pkg/db.py:1" in digest.text


def test_cargo_digest_keeps_left_and_right_of_assert_eq() -> None:
    result, root = load("cargo", "test_assert_eq")
    digest = build_digest(result, root=root)
    assert "FIRST FAILING TEST: tests::adds" in digest.text
    assert "left: 0" in digest.text
    assert "right: 4" in digest.text


def test_github_format_emits_error_annotations_with_file_and_line() -> None:
    result, root = load("tsc", "default")
    out = render_github(result, build_digest(result, root=root))
    assert "::error file=src/main.ts,line=4,col=20," in out


@pytest.mark.parametrize("case", ["long_list", "long_list_vv"])
def test_digest_of_a_1000_element_list_keeps_the_differing_index_under_300_tokens(
    case: str,
) -> None:
    # issue 11: -vv prints both lists in full; the explanation line must survive, the reprs not
    result, root = load("pytest", case)
    digest = build_digest(result, root=root)
    assert "At index 437 diff: -1 != 437" in digest.text
    assert digest.tokens < 300, digest.text
    # the frame is the test the id names: said once, in the id
    assert "FIRST FAILING TEST: tests/test_ids.py::test_ids_are_consecutive" in digest.text
    assert "at tests/test_ids.py:5: assert ids(1000)" in digest.text


def test_digest_shows_the_project_call_chain_from_the_raising_line_up_to_the_test() -> None:
    result, root = load("pytest", "deep_exception")
    lines = build_digest(result, root=root).text.splitlines()
    chain = [line for line in lines if line.startswith(("  at ", "  from "))]
    assert chain == [
        "  at src/pkg/c.py:6 in scale: return scaled + UNIT",
        "  from src/pkg/b.py:7 in transform: out.append(scale(v))",
        "  from src/pkg/a.py:6 in run: return transform(cleaned)",
        '  from tests/test_pipeline.py:5: assert run([1, None, 3]) == ["2px", "6px"]',  # the test's
    ]


def test_digest_collapses_parametrized_failures_of_one_shape_into_one_line() -> None:
    result, root = load("pytest", "cascade_40")
    digest = build_digest(result, root=root)
    assert (
        "tests/test_convert.py::test_convert_usd[…] \N{MULTIPLICATION SIGN}14 — same KeyError"
        in digest.text
    )
    assert "test_convert_usd[2]" not in digest.text
    assert digest.tokens < 300, digest.text


def test_digest_lists_lint_problems_that_break_at_run_time_first_each_with_file_and_line() -> None:
    for tool, case in (("flake8", "errors"), ("ruff", "check_default")):
        result, root = load(tool, case)
        text = build_digest(result, root=root).text
        # flake8's output is smaller than its digest: it is shown whole, its F821 line moved first
        lines = text.splitlines()
        first = next(line for line in lines if line.startswith("FIRST ERROR: "))
        assert first.startswith("FIRST ERROR: src/lintme/core.py:18:16"), text
        assert "F821" in first
        assert lines.index(first) < min(i for i, line in enumerate(lines) if "F401" in line)
        assert any(
            line.strip().startswith(("src/lintme/core.py:1:8", "src/lintme/core.py:1:1"))
            and "F401" in line
            for line in lines
        )
        assert "line 1:" not in text


def test_digest_reads_pytest_9_subtests_counts_and_names_the_failing_subtest_by_label() -> None:
    result, root = load("pytest", "subtests")
    text = build_digest(result, root=root).text
    assert "): 1 failed, 1 passed, 30 subtests passed." in text.splitlines()[0]
    assert (
        "FIRST FAILING TEST: tests/test_data.py::TestData::test_valid [multiline-quotes-01]" in text
    )
    assert "at src/pkg/parse.py:5 in parse" in text


def test_digest_shortens_object_addresses_and_long_byte_string_reprs() -> None:
    from greenloop.digest.compact import compact

    line = f"assert <Conn object at 0x7f3a2b1c4d50> == b'{'A' * 500}'"
    short = compact(line)
    assert "0x7f3a2b1c4d50" not in short
    assert "at 0x…" in short
    assert len(short) <= 160
    assert short.endswith("AAAA'")


def test_digest_collapses_collection_errors_from_one_broken_import_into_one_line() -> None:
    # real: cachetools with a syntax error committed; 13 test files fail to import it
    result, root = load("../real/pytest/cachetools-6", "case")
    text = build_digest(result, root=root).text
    assert "src/cachetools/__init__.py:185 same SyntaxError \N{MULTIPLICATION SIGN}12 (" in text
    assert text.count("SyntaxError") == 2, text


def test_digest_of_a_doctest_that_raised_names_the_exception_not_unexpected_exception() -> None:
    # real: parse's README.rst doctest, a comparison flipped in parse.py; pytest closes the block
    # with "README.rst:40: UnexpectedException", the TypeError is the line above
    result, root = load("../real/pytest/parse-1", "case")
    text = build_digest(result, root=root).text
    first = text.split("FIRST FAILING TEST: README.rst::README.rst\n", 1)[1].splitlines()
    assert first[0] == "  TypeError: 'NoneType' object cannot be interpreted as an integer", text
    assert "from parse.py:928 in __next__" in text


def test_digest_of_a_doctest_keeps_the_value_it_got() -> None:
    # real: toolz's pluck doctest, the bug committed; the Got value is the line after "Got:"
    result, root = load("../real/pytest/toolz-1", "case")
    lines = build_digest(result, root=root).text.splitlines()
    assert lines[lines.index("  Got:") + 1] == "      [(1,), (4,)]"


def test_digest_counts_the_files_of_hidden_js_failures_by_their_frames_not_one_per_title() -> None:
    # eslint/rewrite, `npm test --workspaces`: 37 mocha failures, all in config-array.test.js; a JS
    # title has no `::`, so each title counted as a file ("+32 more in 32 files")
    result, root = load("mocha", "eslint-rewrite-1")
    text = build_digest(result, root=Path(root)).text
    assert "+32 more in 1 file, all AssertionError" in text


def test_digest_keeps_the_source_of_a_frame_whose_function_name_holds_a_secret_word() -> None:
    # sqlparse-4: `at sqlparse/lexer.py:174 in tokenize: return Lexer…` read as a pair
    # `token…: return` and the source line lost its first word to [REDACTED]
    result, root = load("pytest", "sqlparse-4")
    text = build_digest(result, root=root).text
    assert "in tokenize: return Lexer.get_default_instance().get_tokens(sql, encoding)" in text
    assert "[REDACTED]" not in text
    # a pair outside a frame is still hidden
    assert (
        redact("at lexer.py:174 with token: abc123def456")
        == "at lexer.py:174 with token: [REDACTED]"
    )


@pytest.mark.parametrize(
    ("case", "said"),
    [
        # a SyntaxError seeded in pluggy, which pytest imports before its session begins
        ("pluggy-4", ("SyntaxError: expected ':'", "at src/pluggy/_result.py:91: def get_result")),
        # pluggy's hookspec decorator returning None: pytest's own hookspec module dies on it
        (
            "pluggy-1",
            (
                "AttributeError: 'NoneType' object has no attribute 'pytest_spec'",
                "from src/pluggy/_hooks.py:160 in __call__: return setattr_hookspec_opts(function)",
            ),
        ),
    ],
)
def test_digest_of_pytest_that_could_not_start_names_the_projects_line_in_pluggys_own_repo(
    case: str, said: tuple[str, ...]
) -> None:
    result, root = load("pytest", case)
    text = build_digest(result, root=root).text
    assert result.verdict.value == "failed"
    for line in (*said, "pytest could not start: no test ran"):
        assert line in text, text
    assert "could not be parsed" not in text


def test_digest_names_the_test_not_a_function_the_test_defines_above_the_failing_line() -> None:
    # click-3: test_nargs_tup_composite defines `def copy(item):` (a click command), then fails
    # on `assert result.exception is None`: the frame was said to be in copy
    result, root = load("pytest", "click-3")
    text = build_digest(result, root=root).text
    # in the test the id names (said once, there), not in copy
    assert "FIRST FAILING TEST: tests/test_arguments.py::test_nargs_tup_composite[" in text, text
    assert "at tests/test_arguments.py:54: assert result" in text, text
    assert " in copy:" not in text


def test_redaction_keeps_test_ids_and_locations_in_a_file_named_like_a_secret_word() -> None:
    # sqlparse-1 live: `tests/test_tokenize.py::test_…` read as a pair `token…: :test_…`, so
    # greenloop check's JSON listed 16 failing tests as `tests/test_tokenize.py:[REDACTED]`
    data = json.loads((REAL / "pytest" / "sqlparse-1" / "case.json").read_text())
    ids = [i for i in data["facts"]["failing_ids"] if "test_tokenize.py::" in i]
    assert len(ids) >= 10
    assert [redact(i) for i in ids] == ids
    output = data["stdout"]
    located = [ln for ln in output.splitlines() if ln.startswith("tests/test_tokenize.py:")]
    assert located
    assert [redact(ln) for ln in located] == located
    assert redact("token: abc123def456") == "token: [REDACTED]"


def test_digest_of_a_conftest_that_would_not_import_names_the_projects_line_and_the_conftest() -> (
    None
):
    # click-5: tests/conftest.py imports click; a SyntaxError seeded in src/click/utils.py stops
    # pytest with exit 4 before its session: the digest was the raw tail, absolute paths
    result, root = load("pytest", "click-5")
    text = build_digest(result, root=root).text
    assert result.verdict.value == "failed"
    assert "FIRST ERROR: tests/conftest.py" in text, text
    assert "at src/click/utils.py:206: def __iter__(self) -> cabc.Iterator[t.AnyStr]" in text
    assert "pytest could not load tests/conftest.py: no test ran" in text
    assert "could not be parsed" not in text


def test_digest_names_where_an_exception_the_test_only_caught_was_raised() -> None:
    # click-4: CliRunner catches the NameError; the first failure shows only `assert not
    # NameError(...)`, while other tests raised it uncaught at src/click/core.py:1128
    result, root = load("pytest", "click-4")
    text = build_digest(result, root=root).text
    assert "NameError raised at src/click/core.py:1128 in get_params: names_counter" in text, text
    # click-3: "'NoneType' object is not callable" is raised at other lines by other tests
    result, root = load("pytest", "click-3")
    assert "raised at" not in build_digest(result, root=root).text


def test_a_failure_block_past_the_summary_lines_read_is_not_given_to_another_test() -> None:
    # click-6: 1 174 failures, the middle of the output dropped by the byte cap, the summary read
    # up to its 500th line: test_termui.py's test_flag_value_prompt blocks, whose summary lines
    # were not read, were handed to test_basic.py's unmatched ids ("at tests/test_termui.py:1726")
    result, _ = load("pytest", "click-6")
    failures = result.runs[0].parsed.failures
    located = {f.id: f.file for f in failures if f.id.startswith("tests/test_basic.py::")}
    assert located
    assert all(file != "tests/test_termui.py" for file in located.values()), located
    assert any(f.id.startswith("tests/test_termui.py::test_flag_value_prompt[") for f in failures)


def test_digest_counts_one_error_in_the_singular() -> None:
    result, root = load("pytest", "fixture_error")  # pytest: "1 passed, 1 error"
    assert result.runs[0].parsed.counts.errors == 1
    text = build_digest(result, root=root).text
    assert "1 error, 1 passed." in text
    assert "1 errors" not in text


def test_detail_shows_its_one_last_line_rather_than_saying_one_more_line() -> None:
    # attrs under xdist: hypothesis's "Failing test case: test_roundtrip(" example ended with
    # "[… 1 more lines]" where its closing ")" would have taken the same line
    detail = (*(f"line {i}" for i in range(MAX_DETAIL)), ")")
    assert detail_lines(detail) == [*detail]
    longer = (*detail, "after")
    assert detail_lines(longer)[-1] == "[… 2 more lines]"


def test_digest_counts_keep_pytests_xfailed_and_xpassed() -> None:
    # click's suite: "1991 passed, 24 skipped, 31000 deselected, 1 xfailed" (attrs the same):
    # the digest's counts dropped the xfail, evidence pytest gives of a known-broken test
    result, root = load("pytest", "click-0")
    counts = result.runs[0].parsed.counts
    assert (counts.passed, counts.xfailed) == (1991, 1)
    assert "1991 passed, 24 skipped, 1 xfailed." in build_digest(result, root=root).text

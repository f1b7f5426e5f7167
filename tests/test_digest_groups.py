"""The other failures' lines keep what each one compared, the direct failures come first, and a
small output is never made bigger by its digest (issue 26), on real projects' captured runs."""

from __future__ import annotations

import json

import pytest

from greenloop.digest import build_digest, estimate_tokens
from greenloop.processes.process import strip_ansi
from greenloop.verify.cascade import CheckResult
from test_digest import REAL
from test_digest import load as load_case

SLACK_TOKENS = 40  # issue 26: a verdict line on top of the raw output, no more
GROUP = "test_metric[…] \N{MULTIPLICATION SIGN}3"


def load(runner: str, case: str, **changes: object) -> tuple[CheckResult, str]:
    """A captured case as ``greenloop check`` reads it: its colours stripped at capture."""
    data = json.loads((REAL / runner / case / "case.json").read_text(encoding="utf-8"))
    plain = {"stdout": strip_ansi(data["stdout"]), "stderr": strip_ansi(data["stderr"])}
    return load_case(runner, case, **(plain | changes))  # type: ignore[arg-type]


def _others(text: str) -> list[str]:
    return text.partition("OTHER FAILURES")[2].splitlines()[1:]


def test_failures_with_one_message_but_other_expected_values_are_not_folded_as_the_same() -> None:
    # django-filter-1: every mock assertion says "expected call not found."; only the Expected
    # and Actual lines below it differ, and they name what the seeded bug did to each lookup
    result, root = load("django-test", "django-filter-1")
    text = build_digest(result, root=root).text
    assert "same AssertionError" not in text, text
    for expected in (
        "filter(None__exact=(20, 30))",
        "filter(None__endswith=30)",
        "exclude(None__exact=(20, 30))",
    ):
        assert any(f"Expected: {expected}" in line for line in _others(text)), text
    assert any("Actual: filter(None__exact=(None, 30))" in line for line in _others(text))


def test_a_same_shape_group_keeps_each_distinct_pair_on_its_one_line() -> None:
    # humanize-1: three parametrized cases of test_metric at one line, each with its own values
    result, root = load("pytest", "humanize-1")
    text = build_digest(result, root=root).text
    group = [line for line in _others(text) if GROUP in line]
    assert len(group) == 1, text
    for got, wanted in (("1000 V", "1.00 kV"), ("1000 kV", "1.00 MV"), ("1000 μV", "1.00 mV")):
        assert f"'{got}' == '{wanted}'" in group[0], group[0]
    assert "messages differ" not in text


def test_same_is_said_only_when_the_values_are_the_first_failures_too() -> None:
    # dequal-1: three failures of one helper, each `++true (Expected) --false (Actual)`
    result, root = load("uvu", "dequal-1")
    others = _others(build_digest(result, root=root).text)
    assert others == ["  Array > Arrays — same error", "  kitchen > kitchen sink — same error"]


def test_failures_raised_in_the_code_under_test_are_listed_before_the_tests_own_assertions() -> (
    None
):
    # cachetools-1 (TLRU's expiry inverted): the first failures assert in tests/__init__.py; the
    # ones raised inside src/cachetools/ (KeyError from pop) were in "+17 more"
    result, root = load("pytest", "cachetools-1")
    others = _others(build_digest(result, root=root).text)
    assert "KeyError" in others[0], others
    assert "(at src/cachetools/__init__.py:" in others[0]


def test_failures_with_a_frame_in_the_last_edit_come_first_among_the_others() -> None:
    # the same run with its seeded edit as the diff: the failures through the edited file lead
    result, root = load("pytest", "cachetools-1")
    m = json.loads((REAL / "pytest" / "cachetools-1" / "case.json").read_text())["mutation"]
    diff = (
        f"diff --git a/{m['file']} b/{m['file']}\n--- a/{m['file']}\n+++ b/{m['file']}\n"
        f"@@ -{m['line']} +{m['line']} @@\n-{m['before']}\n+{m['after']}\n"
    )
    others = _others(build_digest(result, root=root, diff=diff).text)
    assert "(at src/cachetools/__init__.py:" in others[0], others


@pytest.mark.parametrize(
    ("runner", "case"),
    [
        ("pytest", "wcwidth-2"),  # a conftest that would not import: 197 tokens for 151
        ("go-build", "go-humanize-2"),  # three syntax errors: 132 tokens for 82
        ("uvu", "dequal-4"),
        ("django-test", "django-filter-5"),  # a settings module with a SyntaxError: 808 for 725
    ],
)
def test_a_digest_is_never_more_than_the_raw_output_and_a_verdict_line(
    runner: str, case: str
) -> None:
    result, root = load(runner, case)
    digest = build_digest(result, root=root)
    raw = result.runs[0].result.merged
    assert digest.tokens <= estimate_tokens(raw.strip()) + SLACK_TOKENS, digest.text
    assert digest.text.startswith("The verifier failed (exit "), digest.text


@pytest.mark.parametrize(
    ("tool", "case"), [("tsc", "default"), ("mypy", "strict"), ("ruff", "check_concise")]
)
def test_a_one_file_type_or_lint_report_is_not_made_bigger_than_the_tool_said_it(
    tool: str, case: str
) -> None:
    result, root = load_case(tool, case)
    digest = build_digest(result, root=root)
    raw = result.runs[0].result.merged
    assert digest.tokens <= estimate_tokens(raw.strip()) + SLACK_TOKENS, digest.text


def test_the_header_names_an_interpreter_outside_the_repository_by_its_bare_name() -> None:
    interpreter = "/home/dev/.local/share/venvs/cachetools-3.11/bin/python"
    result, root = load("pytest", "cachetools-2", argv=[interpreter, "-m", "pytest", "tests"])
    first = build_digest(result, root=root).text.splitlines()[0]
    assert "`python -m pytest tests`" in first, first
    assert "/home/dev" not in first


def test_the_header_names_a_repository_path_relative_to_the_repository() -> None:
    result, root = load("pytest", "cachetools-2")
    argv = [f"{root}/.venv/bin/python", "-m", "pytest", f"{root}/tests"]
    result, root = load("pytest", "cachetools-2", argv=argv)
    first = build_digest(result, root=root).text.splitlines()[0]
    assert "`.venv/bin/python -m pytest tests`" in first, first


def test_a_failing_doctest_says_its_expected_and_got_once() -> None:
    # boltons-1: the message was the Expected/Got block again, above the block itself
    result, root = load("pytest", "boltons-1")
    text = build_digest(result, root=root).text
    assert text.count("3 WISHES") == 1, text
    assert (
        "FIRST FAILING TEST: boltons/strutils.py::boltons.strutils.cardinalize\n  DocTestFailure\n"
        in text
    )


def test_a_small_untrusted_run_keeps_its_explanation_within_the_bound() -> None:
    # pytest exit 5: the header's reason is the point, the output is shown whole under it
    result, root = load_case("pytest", "no_tests")
    digest = build_digest(result, root=root)
    raw = result.runs[0].result.merged
    assert digest.tokens <= estimate_tokens(raw.strip()) + SLACK_TOKENS, digest.text
    first = digest.text.splitlines()[0]
    assert "can't be trusted" in first, digest.text
    assert "no tests were collected (pytest exit 5)" in first
    assert "collected 0 items" in digest.text

"""Doctests run by unittest (``doctest.DocTestSuite``): doctest's report follows the traceback (issue 26).

jsonpatch's ``make test`` runs tests.py, which adds ``DocTestSuite(jsonpatch)`` to its TestCases. A
failed docstring is ``FAIL: make_patch (jsonpatch)`` / ``Doctest: jsonpatch.make_patch``, a
traceback ending ``AssertionError: Failed doctest test for jsonpatch.make_patch`` and the
docstring's ``File`` line, then one report per failed example. The traceback's last line was
taken for a frame and the failure lost its type and message.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from greenloop.parsers import ParserInput, parse_output
from greenloop.processes.process import run_command
from test_conformance import check

REAL = Path(__file__).parent / "resources" / "real"


def test_a_failed_docstring_under_unittest_is_doctests_failure_at_its_first_failed_example() -> (
    None
):
    data = json.loads((REAL / "unittest" / "jsonpatch-2" / "case.json").read_text("utf-8"))
    digest = check(data)["digest"]
    assert (
        "AssertionError: Failed doctest test for jsonpatch.make_patch (at jsonpatch.py:176)"
        in digest
    ), digest


def test_unittest_doctest_suite_failure_keeps_the_example_and_what_it_raised(
    tmp_path: Path,
) -> None:
    (tmp_path / "mod.py").write_text(
        'def half(n):\n    """\n    >>> half(4)\n    2\n    >>> half(None)\n    0\n    """\n'
        "    return n // 2\n"
    )
    (tmp_path / "tests.py").write_text(
        "import doctest, sys, unittest\nimport mod\n"
        "suite = doctest.DocTestSuite(mod)\n"
        "result = unittest.TextTestRunner().run(suite)\n"
        "sys.exit(not result.wasSuccessful())\n"
    )
    run = run_command([sys.executable, "tests.py"], cwd=tmp_path, timeout_s=120)
    assert run.exit_code == 1, run.merged
    parsed = parse_output(
        ParserInput(
            argv=("python", "-m", "unittest"), exit_code=1, stdout=run.stdout,
            stderr=run.stderr, merged=run.merged, root=str(tmp_path),
        )
    )  # fmt: skip
    failure = parsed.errors[0]
    assert failure.id == "mod.half"
    assert (failure.error_type, failure.message) == (
        "AssertionError",
        "Failed doctest test for mod.half",
    )
    assert (failure.file, failure.line) == ("mod.py", 5)
    assert failure.detail[:2] == ("Failed example:", "half(None)")
    assert "TypeError: unsupported operand type(s) for //: 'NoneType' and 'int'" in failure.detail

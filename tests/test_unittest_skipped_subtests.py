"""unittest counts every skipped subtest in ``skipped=``, but "Ran N" counts its test once (issue 26).

pathspec's suite skips its hyperscan/re2 backends with ``self.skipTest`` inside ``subTest``: ``Ran
197 tests … OK (skipped=276)``. 197 - 276 was read as 0 passed: UNTRUSTED ("no tests ran") for a
green run. The passed tests are those unittest marked a success (``.``, or ``... ok`` under -v):
a test one of whose subtests was skipped gets no such mark (the truth's unittest_truth.py agrees).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from greenloop.parsers import ParserInput, parse_output
from greenloop.processes.process import run_command
from test_conformance import check

REAL = Path(__file__).parent / "resources" / "real"

SUITE = """import unittest

class T(unittest.TestCase):
    def test_backends(self):
        for name in ("hyperscan", "re2", "simple"):
            with self.subTest(name):
                if name != "simple":
                    self.skipTest(f"{name} is not installed")

    def test_only_skips(self):
        for name in ("hyperscan", "re2"):
            with self.subTest(name):
                self.skipTest(f"{name} is not installed")

    def test_plain(self):
        pass
"""


def test_a_green_unittest_run_whose_subtests_were_skipped_is_green_with_its_passed_tests() -> None:
    data = json.loads((REAL / "unittest" / "pathspec-0" / "case.json").read_text("utf-8"))
    out = check(data)
    assert out["verdict"] == "green", out["digest"]
    assert out["counts"]["passed"] == data["facts"]["counts"]["passed"] == 151
    assert out["counts"]["skipped"] == 276


@pytest.mark.parametrize("verbose", [False, True])
def test_unittest_passed_count_with_skipped_subtests_is_the_tests_marked_a_success(
    tmp_path: Path, verbose: bool
) -> None:
    (tmp_path / "test_subs.py").write_text(SUITE)
    argv = [sys.executable, "-m", "unittest", *(["-v"] if verbose else []), "test_subs"]
    run = run_command(argv, cwd=tmp_path, timeout_s=120)
    assert run.exit_code == 0, run.merged
    assert "Ran 3 tests" in run.merged
    assert "OK (skipped=4)" in run.merged
    parsed = parse_output(
        ParserInput(
            argv=run.argv, exit_code=0, stdout=run.stdout, stderr=run.stderr, merged=run.merged,
            root=str(tmp_path),
        )
    )  # fmt: skip
    # test_plain only: unittest marks no success for a test one of whose subtests was skipped
    assert (parsed.counts.passed, parsed.counts.skipped) == (1, 4), run.merged
    assert parsed.counts.ran

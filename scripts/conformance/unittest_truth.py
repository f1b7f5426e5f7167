"""Run unittest tests through unittest's own result API and print one JSON line (ground truth).

Usage (in the project's interpreter, in the directory the maintainers run from):
    python unittest_truth.py [names...]     # no names: discovery from ".", as ``python -m unittest``
"""

from __future__ import annotations

import io
import json
import sys
import unittest


class Recorder(unittest.TestResult):
    def __init__(self) -> None:
        super().__init__()
        self.failing: list[dict[str, str]] = []
        self.bad_tests: set[str] = set()

    def _record(self, test: unittest.TestCase, err: tuple, sub: str = "") -> None:  # type: ignore[type-arg]
        kind, value = err[0], err[1]
        test_id = test.id()
        if isinstance(test, unittest.case._SubTest):
            test_id = test.test_case.id()
            sub = test._subDescription()
        self.bad_tests.add(test_id)
        self.failing.append(
            {"id": test_id, "sub": sub, "type": kind.__name__, "message": str(value)}
        )

    def addFailure(self, test, err):  # type: ignore[no-untyped-def]
        super().addFailure(test, err)
        self._record(test, err)

    def addError(self, test, err):  # type: ignore[no-untyped-def]
        super().addError(test, err)
        self._record(test, err)

    def addSubTest(self, test, subtest, err):  # type: ignore[no-untyped-def]
        super().addSubTest(test, subtest, err)
        if err is not None:
            self._record(subtest, err)


def main(names: list[str]) -> None:
    sys.path.insert(0, ".")
    loader = unittest.TestLoader()
    suite = loader.loadTestsFromNames(names) if names else loader.discover(".")
    result = Recorder()
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = io.StringIO()
    try:
        suite.run(result)
    finally:
        sys.stdout, sys.stderr = saved
    skipped = len(result.skipped)
    passed = result.testsRun - len(result.bad_tests) - skipped
    counts = {"passed": max(passed, 0), "failed": len(result.bad_tests), "skipped": skipped}
    print(json.dumps({"ran": result.testsRun, "counts": counts, "failing": result.failing}))


if __name__ == "__main__":
    main(sys.argv[1:])

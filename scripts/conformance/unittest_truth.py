"""Run unittest tests through unittest's own result API and print one JSON line (ground truth).

Usage (in the project's interpreter, in the directory the maintainers run from):
    python unittest_truth.py [names...]     # no names: discovery from ".", as ``python -m unittest``
    python unittest_truth.py --discover DIR # as ``python -m unittest discover DIR``
"""

from __future__ import annotations

import io
import json
import sys
import unittest


def _import_cause(text: str) -> tuple[str, str]:
    last = text.rstrip().splitlines()[-1]
    name, sep, message = last.partition(": ")
    if sep and name.replace(".", "").replace("_", "").isalnum():
        return name.rsplit(".", 1)[-1], message
    return "ImportError", text.splitlines()[0]


class Recorder(unittest.TestResult):
    def __init__(self) -> None:
        super().__init__()
        self.failing: list[dict[str, str]] = []
        self.bad_tests: set[str] = set()

    def _record(self, test: unittest.TestCase, err: tuple, sub: str = "") -> None:  # type: ignore[type-arg]
        kind, value = err[0].__name__, str(err[1])
        if isinstance(err[1], ImportError) and value.startswith("Failed to import test module"):
            kind, value = _import_cause(value)  # a _FailedTest: the real error is its last line
        test_id = test.id()
        if isinstance(test, unittest.case._SubTest):
            test_id = test.test_case.id()
            sub = test._subDescription()
        self.bad_tests.add(test_id)
        self.failing.append({"id": test_id, "sub": sub, "type": kind, "message": value})

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
    if names[:1] == ["--discover"]:
        suite = loader.discover(names[1] if len(names) > 1 else ".")
    else:
        suite = loader.loadTestsFromNames(names) if names else loader.discover(".")
    result = Recorder()
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = io.StringIO()
    try:
        suite.run(result)
    finally:
        sys.stdout, sys.stderr = saved
    skipped = len(result.skipped)
    # failed as unittest's summary counts it (failures + errors: one per failing subtest too);
    # passed: the tests that really passed (a test with a failing subtest did not)
    passed = result.testsRun - len(result.bad_tests) - skipped
    failed = len(result.failures) + len(result.errors)
    counts = {"passed": max(passed, 0), "failed": failed, "skipped": skipped}
    print(json.dumps({"ran": result.testsRun, "counts": counts, "failing": result.failing}))


if __name__ == "__main__":
    main(sys.argv[1:])

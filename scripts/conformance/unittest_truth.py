"""Run unittest tests through unittest's own result API and print one JSON line (ground truth).

Usage (in the project's interpreter, in the directory the maintainers run from):
    python unittest_truth.py [names...]     # no names: discovery from ".", as ``python -m unittest``
    python unittest_truth.py --discover DIR [PATTERN [TOP]]  # as ``python -m unittest discover``
    python unittest_truth.py --script tests.py  # a script that runs its own suite
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
        self.skipped_tests: set[str] = set()
        """Tests skipped whole or in a subtest (pathspec's backends): no success of their own."""
        self.succeeded: set[str] = set()

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

    def addSkip(self, test, reason):  # type: ignore[no-untyped-def]
        super().addSkip(test, reason)
        parent = test.test_case if isinstance(test, unittest.case._SubTest) else test
        self.skipped_tests.add(parent.id())

    def addSuccess(self, test):  # type: ignore[no-untyped-def]
        super().addSuccess(test)
        self.succeeded.add(test.id())

    def addSubTest(self, test, subtest, err):  # type: ignore[no-untyped-def]
        super().addSubTest(test, subtest, err)
        if err is not None:
            self._record(subtest, err)


def run_script(path: str, result: Recorder) -> None:
    """A script that builds and runs its own suite with TextTestRunner (jsonpatch's tests.py):
    run as ``__main__``; every runner it makes records into ``result``. An exception that ends the
    script before its suite ran (its module would not import) is one error, named by the script."""
    import runpy

    def record(runner: unittest.TextTestRunner, test: unittest.TestSuite) -> Recorder:
        test.run(result)
        return result

    unittest.TextTestRunner.run = record  # type: ignore[assignment, method-assign]
    sys.argv = [path]
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit:
        pass
    except Exception as exc:
        result.failing.append(
            {"id": path, "sub": "", "type": type(exc).__name__, "message": str(exc)}
        )
        result.errors.append((None, str(exc)))  # type: ignore[arg-type]


def main(names: list[str]) -> None:
    sys.path.insert(0, ".")
    loader = unittest.TestLoader()
    result = Recorder()
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = io.StringIO()
    try:
        if names[:1] == ["--script"]:
            run_script(names[1], result)
        else:
            if names[:1] == ["--discover"]:
                given = names[1:]
                start, pattern, top = (*given, *(".", "test*.py", "")[len(given) :])[:3]
                suite = loader.discover(start, pattern or "test*.py", top or None)
            else:
                suite = loader.loadTestsFromNames(names) if names else loader.discover(".")
            suite.run(result)
    finally:
        sys.stdout, sys.stderr = saved
    skipped = len(result.skipped)
    # failed and skipped as unittest's summary counts them (one per failing or skipped subtest
    # too); passed: the tests that really passed (a test with a failing subtest did not, nor one
    # whose subtests were skipped and that unittest never marked a success)
    unsure = result.skipped_tests - result.succeeded - result.bad_tests
    passed = result.testsRun - len(result.bad_tests) - len(unsure)
    failed = len(result.failures) + len(result.errors)
    counts = {"passed": max(passed, 0), "failed": failed, "skipped": skipped}
    print(json.dumps({"ran": result.testsRun, "counts": counts, "failing": result.failing}))


if __name__ == "__main__":
    main(sys.argv[1:])

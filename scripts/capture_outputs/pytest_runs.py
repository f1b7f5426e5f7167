"""pytest cases: xdist failures and crashes, no tests, pytest-cov and pytest-timeout, usage
errors, warnings, captured output, parametrized ids."""

from __future__ import annotations

from pytest_failures import P
from registry import add, at, facts

# xdist with failures
fs = P({
    "src/pkg/text.py": """
        def words(s):
            return s.split(" ")
        """,
    "tests/test_a.py": """
        from pkg.text import words


        def test_words_simple():
            assert words("a b") == ["a", "b"]


        def test_words_double_space():
            assert words("a  b") == ["a", "b"]
        """,
    "tests/test_b.py": """
        import pytest

        from pkg.text import words


        @pytest.mark.parametrize("s,n", [("x", 1), ("x y", 2), ("", 0)])
        def test_count(s, n):
            assert len(words(s)) == n


        def test_ok():
            assert words("q") == ["q"]
        """,
})
add("pytest", "xdist_failures", fs, ["pytest", "-n", "2"],
    facts(["tests/test_a.py::test_words_double_space", "tests/test_b.py::test_count[-0]"],
          "AssertionError", "assert ['a', '', 'b'] == ['a', 'b']",
          at(fs, "tests/test_a.py", "assert words(\"a  b\")"), 2))

# xdist worker crash
fs = P({
    "tests/test_crash.py": """
        import os
        import signal


        def test_before():
            assert 1 + 1 == 2


        def test_killed():
            os.kill(os.getpid(), signal.SIGKILL)


        def test_after():
            assert True
        """,
})
add("pytest", "xdist_worker_crash", fs, ["pytest", "-n", "2"],
    facts(["tests/test_crash.py::test_killed"], "crashed", "crashed while running",
          at(fs, "tests/test_crash.py", "os.kill(os.getpid()"), 1, killed=True))
fs = P({
    "tests/test_exit.py": """
        import os


        def test_fine():
            assert True


        def test_hard_exit():
            os._exit(3)
        """,
})
add("pytest", "xdist_worker_os_exit", fs, ["pytest", "-n", "2"],
    facts(["tests/test_exit.py::test_hard_exit"], "crashed", "crashed while running",
          at(fs, "tests/test_exit.py", "os._exit(3)"), 1, killed=True))

# no tests collected
fs = P({
    "tests/helpers.py": """
        def make():
            return 1
        """,
})
add("pytest", "no_tests", fs, ["pytest"], facts([], None, "no tests ran", None, 0))

# pytest-cov's gate: every test passes, coverage is under --cov-fail-under (exit 1)
fs = P({
    "src/pkg/calc.py": """
        def add(a, b):
            return a + b


        def mul(a, b):
            return a * b
    """,
    "tests/test_calc.py": """
        from pkg.calc import add


        def test_add():
            assert add(2, 3) == 5
    """,
})
# pytest-timeout's thread method: a hung test ends the run (stacks, no summary)
fs_hang = P({
    "src/pkg/poll.py": """
        import time


        def wait_ready(flag):
            while not flag:
                time.sleep(0.05)
            return True
    """,
    "tests/test_poll.py": """
        from pkg.poll import wait_ready


        def test_ready_now():
            assert wait_ready(True)


        def test_ready_never():
            assert wait_ready(False)
    """,
})
add("pytest", "timeout_thread", fs_hang, ["pytest", "--timeout=2", "--timeout-method=thread"],
    facts(["tests/test_poll.py::test_ready_never"], "Timeout", None,
          at(fs_hang, "src/pkg/poll.py", "time.sleep(0.05)"), 1))

add("pytest", "coverage_gate", fs,
    ["pytest", "--cov=pkg", "--cov-fail-under=90", "--cov-report=term-missing"],
    facts([], "coverage", "Required test coverage of 90% not reached. Total coverage: 75.00%",
          at(fs, "src/pkg/calc.py", "return a * b"), 0))

# usage errors
fs = P({"tests/test_ok.py": "def test_ok():\n    assert True\n"})
add("pytest", "usage_error", fs, ["pytest", "--bogus-flag"],
    facts([], "usage", "unrecognized arguments: --bogus-flag", None, None))
add("pytest", "file_not_found", fs, ["pytest", "tests/test_missing.py"],
    facts([], None, "file or directory not found: tests/test_missing.py", None, None))

# all passing with warnings
fs = P({
    "src/pkg/legacy.py": """
        import warnings


        def old_api(x):
            warnings.warn("old_api is deprecated, use new_api", DeprecationWarning, stacklevel=2)
            return x * 2
        """,
    "tests/test_legacy.py": """
        import warnings

        from pkg.legacy import old_api


        def test_old_api():
            assert old_api(2) == 4


        def test_user_warning():
            warnings.warn("cache directory missing, using /tmp", UserWarning)
            assert True


        def test_plain():
            assert old_api(0) == 0
        """,
})
add("pytest", "pass_with_warnings", fs, ["pytest"],
    facts([], "DeprecationWarning", "old_api is deprecated, use new_api",
          at(fs, "tests/test_legacy.py", "assert old_api(2) == 4"), 0))

# -x --tb=short
fs = P({
    "src/pkg/mathx.py": """
        def mean(xs):
            return sum(xs) / len(xs)
        """,
    "tests/test_mathx.py": """
        from pkg.mathx import mean


        def test_mean():
            assert mean([1, 2, 3]) == 2


        def test_mean_empty():
            assert mean([]) == 0


        def test_mean_float():
            assert mean([1, 2]) == 1


        def test_mean_neg():
            assert mean([-1, -3]) == -3
        """,
})
add("pytest", "exitfirst_tb_short", fs, ["pytest", "-x", "--tb=short"],
    facts(["tests/test_mathx.py::test_mean_empty"], "ZeroDivisionError", "division by zero",
          at(fs, "src/pkg/mathx.py", "return sum(xs) / len(xs)"), 1))
add("pytest", "tb_no", fs, ["pytest", "--tb=no"],
    facts(["tests/test_mathx.py::test_mean_empty", "tests/test_mathx.py::test_mean_float",
           "tests/test_mathx.py::test_mean_neg"], "ZeroDivisionError", "division by zero",
          None, 3))

# captured stdout / log sections
fs = P({
    "src/pkg/service.py": """
        import logging

        log = logging.getLogger("pkg.service")


        def handle(request):
            print(f"handling {request!r}")
            log.warning("retrying %s after timeout", request)
            log.info("cache miss for %s", request)
            return {"status": 500}
        """,
    "tests/test_service.py": """
        import logging
        import sys

        from pkg.service import handle


        def test_handle_ok(caplog):
            caplog.set_level(logging.INFO)
            print("setting up request")
            sys.stderr.write("stderr noise from test\\n")
            resp = handle("GET /health")
            assert resp["status"] == 200, f"unexpected response {resp}"
        """,
})
add("pytest", "captured_output", fs, ["pytest"],
    facts(["tests/test_service.py::test_handle_ok"], "AssertionError", "unexpected response {'status': 500}",
          at(fs, "tests/test_service.py", "assert resp[\"status\"] == 200"), 1))

# parametrized ids with brackets
fs = P({
    "src/pkg/types_.py": """
        def parse_type(s):
            if s.endswith("]"):
                return s[: s.index("[")]
            return s
        """,
    "tests/test_types.py": """
        import pytest

        from pkg.types_ import parse_type


        @pytest.mark.parametrize(
            "text,expected",
            [
                pytest.param("int", "int", id="int"),
                pytest.param("list[int]", "list[int]", id="list[int]"),
                pytest.param("dict[str, list[int]]", "dict", id="dict[str, list[int]]"),
                ("tuple[()]", "tuple[()]"),
            ],
        )
        def test_parse_type(text, expected):
            assert parse_type(text) == expected
        """,
})
add("pytest", "param_brackets", fs, ["pytest"],
    facts(["tests/test_types.py::test_parse_type[list[int]]", "tests/test_types.py::test_parse_type[tuple[()]-tuple[()]]"],
          "AssertionError", "assert 'list' == 'list[int]'",
          at(fs, "tests/test_types.py", "assert parse_type(text) == expected"), 2))

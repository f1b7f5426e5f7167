"""pytest cases: fixture errors, a segfault, a killed run, mixed outcomes, doctest, unicode
chains, pytest missing from the interpreter."""

from __future__ import annotations

from pytest_failures import P
from registry import BARE_VENV, add, at, facts

# fixture error at setup
fs = P({
    "tests/conftest.py": """
        import pytest


        def open_db(url):
            raise ConnectionRefusedError(f"could not connect to {url}")


        @pytest.fixture
        def db():
            conn = open_db("postgres://localhost:5432/test")
            yield conn
        """,
    "tests/test_repo.py": """
        def test_insert(db):
            assert db is not None


        def test_no_db():
            assert True
        """,
})
add("pytest", "fixture_error", fs, ["pytest"],
    facts(["tests/test_repo.py::test_insert"], "ConnectionRefusedError",
          "could not connect to postgres://localhost:5432/test",
          at(fs, "tests/conftest.py", "raise ConnectionRefusedError"), 1))
fs = P({
    "tests/test_teardown.py": """
        import pytest


        @pytest.fixture
        def resource():
            yield "r"
            raise RuntimeError("teardown failed: resource still locked")


        def test_uses_resource(resource):
            assert resource == "r"
        """,
})
add("pytest", "teardown_error", fs, ["pytest"],
    facts(["tests/test_teardown.py::test_uses_resource"], "RuntimeError",
          "teardown failed: resource still locked",
          at(fs, "tests/test_teardown.py", "raise RuntimeError"), 1))

# segfault without xdist
fs = P({
    "tests/test_native.py": """
        import os


        def test_ok():
            assert True


        def test_crashes():
            os.kill(os.getpid(), 11)


        def test_never_runs():
            assert True
        """,
})
add("pytest", "segfault", fs, ["pytest"],
    facts(["tests/test_native.py::test_crashes"], "Segmentation fault", "Fatal Python error: Segmentation fault",
          at(fs, "tests/test_native.py", "os.kill(os.getpid(), 11)"), 1, killed=True))

# timeout: the harness kills a hanging run
fs = P({
    "tests/test_slow.py": """
        import time


        def test_fast():
            assert True


        def test_hangs():
            time.sleep(600)
        """,
})
add("pytest", "timeout_killed", fs, ["pytest"],
    facts(["tests/test_slow.py::test_hangs"], None, None,
          at(fs, "tests/test_slow.py", "time.sleep(600)"), None, killed=True), timeout=8)

# mixed outcomes summary
fs = P({
    "tests/test_mixed.py": """
        import sys

        import pytest


        def test_pass():
            assert True


        def test_fail():
            assert 1 == 2


        @pytest.mark.skip(reason="not on this platform")
        def test_skip():
            pass


        @pytest.mark.xfail(reason="known bug #12")
        def test_xfail():
            assert False


        @pytest.mark.xfail(reason="should fail but passes")
        def test_xpass():
            assert True


        @pytest.fixture
        def broken():
            raise ValueError("fixture exploded")


        def test_error(broken):
            pass
        """,
})
add("pytest", "mixed_outcomes", fs, ["pytest", "-rA"],
    facts(["tests/test_mixed.py::test_fail", "tests/test_mixed.py::test_error"], "AssertionError", "assert 1 == 2",
          at(fs, "tests/test_mixed.py", "assert 1 == 2"), 2))

# doctest failure
fs = P({
    "src/pkg/fmt.py": '''
        def money(cents):
            """Format cents.

            >>> money(1050)
            '$10.50'
            >>> money(5)
            '$0.05'
            """
            return f"${cents // 100}.{cents % 100}"
        ''',
})
add("pytest", "doctest", fs, ["pytest", "--doctest-modules", "src"],
    facts(["src/pkg/fmt.py::pkg.fmt.money"], "DocTestFailure", "Expected:",
          at(fs, "src/pkg/fmt.py", ">>> money(5)"), 1))

# unicode + long message + nested exception chain
fs = P({
    "src/pkg/loader.py": """
        import json


        class ConfigError(Exception):
            pass


        def load(text):
            try:
                return json.loads(text)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"invalid config: {exc.msg} (naïve parser)") from exc
        """,
    "tests/test_loader.py": """
        from pkg.loader import load


        def test_load_broken():
            assert load('{"a": 1,}') == {"a": 1}
        """,
})
add("pytest", "exception_chain", fs, ["pytest"],
    facts(["tests/test_loader.py::test_load_broken"], "pkg.loader.ConfigError",
          "invalid config: Expecting property name enclosed in double quotes (naïve parser)",
          at(fs, "src/pkg/loader.py", "raise ConfigError"), 1))

# pytest not installed in the interpreter used (env failure)
fs = P({"tests/test_ok.py": "def test_ok():\n    assert True\n"})
add("pytest", "not_installed", fs, ["python", "-m", "pytest"],
    facts([], "ModuleNotFoundError", "No module named pytest", None, None),
    requires=["python"], version=["python", "--version"], path_front=[str(BARE_VENV / "bin")])

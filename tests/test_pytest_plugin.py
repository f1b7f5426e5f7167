"""The greenloop pytest plugin in real pytest runs (plain, xdist, killed, alongside user plugins)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from greenloop.detect.stages import Stage
from greenloop.parsers import ParseResult, ParserInput, parse_output
from greenloop.parsers.model import Kind
from greenloop.verify import instrument
from greenloop.verify.cascade import run_stage
from limits import hang

TESTS = """\
import os, signal
import pytest
from helper import scale

def test_ok():
    assert scale(1) == 2

def test_deep():
    assert scale("x") == 2

@pytest.mark.parametrize("n", [1, 2])
def test_param(n):
    assert n == 1, f"bad {n}"

@pytest.mark.xfail(reason="known")
def test_xfail():
    assert False

@pytest.fixture
def broken():
    raise RuntimeError("fixture exploded")

def test_fixture(broken):
    pass
"""
HELPER = "def scale(v):\n    return v * 2 + 0 if isinstance(v, int) else v + 1\n"


def make_project(tmp_path: Path, tests: str = TESTS) -> Path:
    root = tmp_path / "proj"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_a.py").write_text(tests)
    (root / "helper.py").write_text(HELPER)
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["."]\n')
    return root


def run_pytest(root: Path, *args: str, environ: dict[str, str] | None = None) -> ParseResult:
    base = dict(environ if environ is not None else os.environ)
    argv = (sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args)
    if "-n" in args:
        # only xdist, not every plugin of this venv (langsmith, hypothesis, anyio) in each worker:
        # on two loaded cores their imports made one worker start in minutes, not seconds
        base["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        argv = (*argv[:3], "-p", "xdist", *argv[3:])
    inst = instrument.prepare(argv, root, base)
    try:
        proc = subprocess.run(
            argv,
            check=False,
            cwd=root,
            env=base | dict(inst.env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=hang(300),
        )
        artifacts = instrument.collect(inst)
    finally:
        instrument.cleanup(inst)
    assert any(name.startswith(instrument.PLUGIN_PREFIX) for name, _ in artifacts), proc.stdout
    # artifacts only: the structured path must stand on its own
    return parse_output(
        ParserInput(argv=argv, exit_code=proc.returncode, artifacts=artifacts, root=str(root))
    )


def test_plugin_reports_exact_ids_frames_and_counts(tmp_path: Path) -> None:
    result = run_pytest(make_project(tmp_path))
    ids = [f.id for f in result.errors]
    assert sorted(ids) == [
        "tests/test_a.py::test_deep",
        "tests/test_a.py::test_fixture",
        "tests/test_a.py::test_param[2]",
    ]
    deep = next(f for f in result.errors if f.id.endswith("test_deep"))
    assert deep.error_type == "TypeError"
    assert (deep.file, deep.line) == ("helper.py", 2)
    assert [fr.function for fr in deep.frames] == ["test_deep", "scale"]
    assert deep.frames[-1].source.startswith("return v * 2")
    param = next(f for f in result.errors if f.id.endswith("[2]"))
    assert param.message == "bad 2"
    assert param.detail == ("assert 2 == 1",)
    c = result.counts
    assert (c.passed, c.failed, c.errors, c.xfailed) == (2, 2, 1, 1)
    assert c.summary_seen


def test_plugin_under_xdist_counts_each_test_once(tmp_path: Path) -> None:
    result = run_pytest(make_project(tmp_path), "-n", "2")
    ids = [f.id for f in result.errors]
    assert len(ids) == len(set(ids)) == 3
    assert (result.counts.failed, result.counts.errors, result.counts.passed) == (2, 1, 2)
    deep = next(f for f in result.errors if f.id.endswith("test_deep"))
    assert [fr.function for fr in deep.frames] == ["test_deep", "scale"]  # the worker's frames


def test_plugin_names_the_test_a_killed_run_was_in(tmp_path: Path) -> None:
    tests = "import os, signal\n\ndef test_a():\n    pass\n\ndef test_dies():\n"
    tests += "    os.kill(os.getpid(), signal.SIGKILL)\n\ndef test_c():\n    pass\n"
    result = run_pytest(make_project(tmp_path, tests))
    assert result.killed == ("tests/test_a.py::test_dies",)
    assert not result.counts.summary_seen


def test_plugin_names_the_crashed_xdist_worker_test(tmp_path: Path) -> None:
    tests = "import os\n\ndef test_a():\n    pass\n\ndef test_exit():\n    os._exit(3)\n"
    result = run_pytest(make_project(tmp_path, tests), "-n", "2")
    assert "tests/test_a.py::test_exit" in result.killed
    crash = next(f for f in result.errors if f.id == "tests/test_a.py::test_exit")
    assert crash.kind is Kind.CRASH


def test_plugin_loads_alongside_existing_pythonpath_and_plugins(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    own = tmp_path / "own"
    own.mkdir()
    marker = tmp_path / "marker"
    (own / "userplugin.py").write_text(
        f"def pytest_configure(config):\n    open({str(marker)!r}, 'w').write('loaded')\n"
    )
    environ = dict(os.environ, PYTHONPATH=str(own), PYTEST_PLUGINS="userplugin")
    result = run_pytest(root, environ=environ)
    assert marker.read_text() == "loaded"
    assert len(result.errors) == 3


def test_a_run_whose_environment_drops_the_plugin_path_is_rerun_plainly(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    command = f"env -u PYTHONPATH {sys.executable} -m pytest -p no:cacheprovider"
    run = run_stage(root, Stage(name="test", command=command, why="test"), timeout=hang(120))
    assert instrument.PLUGIN_LOAD_ERROR not in run.result.merged
    assert run.parsed.counts.summary_seen
    assert run.parsed.counts.failed == 2


DOCTESTS = '''\
def half(n):
    """
    >>> half(4)
    3
    """
    return n // 2


def ratio(a, b):
    """
    >>> ratio(1, 0)
    0
    """
    return a / b
'''


def test_plugin_reads_a_doctest_s_expected_and_got_and_the_exception_an_example_raised(
    tmp_path: Path,
) -> None:
    # the exceptions pytest raises for doctests say nothing (<DocTest calc.half from ...>): the text does
    root = make_project(tmp_path)
    (root / "calc.py").write_text(DOCTESTS)
    result = run_pytest(root, "--doctest-modules", "calc.py")
    by_id = {f.id: f for f in result.errors}
    assert sorted(by_id) == ["calc.py::calc.half", "calc.py::calc.ratio"]
    half = by_id["calc.py::calc.half"]
    assert half.message == "Expected: 3 Got: 2", half
    assert (half.file, half.line) == ("calc.py", 3), half
    ratio = by_id["calc.py::calc.ratio"]
    assert (ratio.error_type, ratio.message) == ("ZeroDivisionError", "division by zero")
    assert ("calc.py", 14) in [(fr.file, fr.line) for fr in ratio.frames], ratio.frames


HYPOTHESIS_TESTS = """\
from hypothesis import given, settings, strategies as st

@settings(derandomize=True, database=None)
@given(st.integers())
def test_small(n):
    assert n < 5

@settings(derandomize=True, database=None)
@given(st.text())
def test_bare(s):
    assert len(s) < 2, ""
"""


def test_plugin_keeps_the_failing_example_hypothesis_adds_as_an_exception_note(
    tmp_path: Path,
) -> None:
    # attrs: hypothesis's "Failing test case: test_recurse_property(...)" is an add_note note, which
    # str(exception) leaves out: the live run's digest lost the example the text run showed
    root = make_project(tmp_path, HYPOTHESIS_TESTS)
    by_id = {f.id: f for f in run_pytest(root).errors}
    small = by_id["tests/test_a.py::test_small"]
    assert small.message == "assert 5 < 5", small
    assert any(d.startswith(("Falsifying example", "Failing test case")) for d in small.detail)
    assert "n=5," in small.detail, small.detail
    bare = by_id["tests/test_a.py::test_bare"]
    assert bare.error_type == "AssertionError", bare
    assert not bare.message.startswith(("Falsifying", "Failing")), bare
    assert any(d.startswith("s=") for d in bare.detail), bare.detail


SUBTESTS = """\
import unittest


class TestNumbers(unittest.TestCase):
    def test_even(self):
        for i in range(4):
            with self.subTest(i=i):
                self.assertEqual(i % 2, 0)

    def test_other(self):
        pass
"""


def test_plugin_names_each_failing_subtest_as_pytest_prints_it_and_selects_its_test(
    tmp_path: Path,
) -> None:
    # pyparsing's subTest failures (pytest 9): the plugin reported each under its test's bare id,
    # the text under "id (<subtest>)", so the digest listed every failure twice (12 for 6)
    root = make_project(tmp_path, SUBTESTS)
    result = run_pytest(root)
    ids = [f.id for f in result.errors]
    assert ids == [
        "tests/test_a.py::TestNumbers::test_even (i=1)",
        "tests/test_a.py::TestNumbers::test_even (i=3)",
    ], ids
    c = result.counts  # pytest: "2 failed, 2 passed, 2 subtests passed"
    assert (c.failed, c.passed, c.subtests_passed) == (2, 2, 2), c
    # a failing-first run selects the test of a failing subtest, and only it
    env = dict(os.environ) | {"GREENLOOP_PYTEST_SELECT": ids[0]}
    again = run_pytest(root, environ=env)
    assert [f.id for f in again.errors] == ids
    assert (again.counts.collected, again.counts.failed) == (1, 2), again.counts


NESTED = """\
import subprocess, sys
import pytest

INNER = "def test_inner():\\n    assert 1 == 2, 'meant to fail'\\n"

def test_inner_session_in_a_subprocess_fails_as_meant(tmp_path):
    (tmp_path / "test_inner.py").write_text(INNER)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 1, done.stdout

def test_inner_session_in_process_fails_as_meant(tmp_path):
    (tmp_path / "test_inner2.py").write_text(INNER)
    assert pytest.main(["-q", "-p", "no:cacheprovider", str(tmp_path)]) == 1
"""


def test_plugin_records_nothing_of_the_pytest_sessions_a_plugins_own_tests_start(
    tmp_path: Path,
) -> None:
    # pytest-mock's suite: pytester's sessions inherit PYTEST_PLUGINS and the report dir; their
    # failures (meant ones) were recorded as the run's, and a green run was UNTRUSTED
    result = run_pytest(make_project(tmp_path, NESTED))
    assert result.errors == (), result.errors
    assert (result.counts.passed, result.counts.failed) == (2, 0)

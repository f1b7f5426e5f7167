#!/usr/bin/env python3
"""Capture REAL output of real verifier tools, for greenloop's parser tests.

Each case writes a tiny project into /tmp/glcap/<tool>_<case>, runs the real
tool there, and stores what it printed in
tests/resources/outputs/<tool>/<case>.json (+ <case>.txt for humans).

The "facts" of each case (failing ids, error type, message, frame, ...) are
ground truth declared here, next to the project they describe; they are NOT
derived from the output.  After capturing, the script checks that each fact
appears verbatim in the output and lists the ones that do not under
"facts_unverified" (some facts, e.g. the id of a test that killed its runner,
are true but never printed by the tool).

Stdlib only.  Tools come from PATH, with /tmp/glcap-tools/venv/bin and
/tmp/glcap-tools/node/node_modules/.bin in front (see
scripts/install_capture_tools.sh).  A case whose tool is missing is skipped.

Usage:
    python3 scripts/capture_outputs.py              # all cases
    python3 scripts/capture_outputs.py --only pytest --only cargo
    python3 scripts/capture_outputs.py --only pytest --case deep_exception
    python3 scripts/capture_outputs.py --list
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
OUT_DIR = REPO / "tests" / "resources" / "outputs"
PROJECTS_DIR = Path(__file__).resolve().parent / "capture_projects"
CAP_ROOT = Path(os.environ.get("GLCAP_ROOT", "/tmp/glcap"))
TOOLS = Path(os.environ.get("GLCAP_TOOLS", "/tmp/glcap-tools"))
VENV_BIN = TOOLS / "venv" / "bin"
NODE_MODULES = TOOLS / "node" / "node_modules"
NODE_BIN = NODE_MODULES / ".bin"
BARE_VENV = TOOLS / "bare-venv"

FORCED_ENV = {
    "NO_COLOR": "1",
    "CARGO_TERM_COLOR": "never",
    "MYPY_FORCE_TERMINAL_WIDTH": "2000",
    "PAGER": "cat",
    "TQDM_DISABLE": "1",
    "PIP_PROGRESS_BAR": "off",
    # determinism / no network beyond what is needed
    "GOPROXY": "off",
    "GOTOOLCHAIN": "local",
    "GOFLAGS": "",
    "npm_config_update_notifier": "false",
    "PYTHONDONTWRITEBYTECODE": "1",
    "LANG": "C.UTF-8",
}
DROPPED_ENV = {
    "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTHONPATH", "VIRTUAL_ENV", "COLUMNS",
    "LINES", "CI", "FORCE_COLOR", "CLICOLOR_FORCE", "NODE_OPTIONS", "RUSTFLAGS",
    "CARGO_TARGET_DIR", "MYPY_CACHE_DIR", "PYTHONSTARTUP", "PYTHONUNBUFFERED",
    "GITHUB_ACTIONS", "TF_BUILD", "JEST_WORKER_ID", "RUST_BACKTRACE", "RUST_LIB_BACKTRACE",
    "LC_ALL", "LC_MESSAGES", "LANGUAGE",
}

ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")


def D(s: str) -> str:
    """Dedent a file body written inline."""
    return textwrap.dedent(s).lstrip("\n")


@dataclass
class Case:
    tool: str
    name: str
    files: dict[str, str]
    argv: list[str] | str
    facts: dict[str, Any]
    requires: list[str]
    version_argv: list[str] | str
    timeout: float = 180.0
    setup: list[list[str] | str] = field(default_factory=list)
    link_node_modules: bool = False
    env: dict[str, str] = field(default_factory=dict)
    path_front: list[str] = field(default_factory=list)
    description: str = ""

    @property
    def cwd(self) -> Path:
        return CAP_ROOT / f"{self.tool}_{self.name}"


CASES: list[Case] = []


def at(files: dict[str, str], path: str, needle: str, nth: int = 1) -> str:
    """'path:LINE' of the nth line of files[path] containing needle."""
    seen = 0
    for i, line in enumerate(files[path].splitlines(), 1):
        if needle in line:
            seen += 1
            if seen == nth:
                return f"{path}:{i}"
    raise ValueError(f"{needle!r} not found in {path}")


def facts(failing_ids: list[str], error_type: str | None, message: str | None,
          frame: str | None, count_failed: int | None = None,
          killed: bool = False, counts: dict[str, int] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "failing_ids": failing_ids,
        "error_type": error_type,
        "message": message,
        "frame": frame,
        "count_failed": count_failed,
        "killed": killed,
    }
    if counts is not None:  # what the runner's summary must say: {passed, failed, skipped}
        out["counts"] = counts
    return out


def add(tool: str, name: str, files: dict[str, str], argv: list[str] | str,
        f: dict[str, Any], *, requires: list[str] | None = None,
        version: list[str] | str | None = None, **kw: Any) -> None:
    if requires is None:
        requires = [argv[0] if isinstance(argv, list) else argv.split()[0]]
    if version is None:
        version = [requires[0], "--version"]
    CASES.append(Case(tool, name, dict(files), argv, f, requires, version, **kw))


# --------------------------------------------------------------------------
# pytest
# --------------------------------------------------------------------------
PYPROJECT = D("""
    [project]
    name = "demo"
    version = "0.1.0"

    [tool.pytest.ini_options]
    pythonpath = ["src"]
    testpaths = ["tests"]
""")


def P(files: dict[str, str]) -> dict[str, str]:
    base = {"pyproject.toml": PYPROJECT, "src/pkg/__init__.py": ""}
    base.update({k: D(v) for k, v in files.items()})
    return base


PYTEST_V = ["pytest", "--version"]

# assertion failure with dict / list diff
fs = P({
    "src/pkg/config.py": """
        DEFAULTS = {"host": "localhost", "port": 8080, "debug": False, "tags": ["a", "b"]}


        def merge(base, override):
            out = dict(base)
            for key, value in override.items():
                if key != "port":  # bug: port overrides are dropped
                    out[key] = value
            return out
        """,
    "tests/test_config.py": """
        from pkg.config import DEFAULTS, merge


        def test_merge_overrides_port():
            merged = merge(DEFAULTS, {"port": 9090, "debug": True})
            assert merged == {"host": "localhost", "port": 9090, "debug": True, "tags": ["a", "b"]}


        def test_tags_order():
            tags = sorted(["b", "c", "a"], reverse=True)
            assert tags == ["a", "b", "c"]


        def test_defaults_untouched():
            assert DEFAULTS["port"] == 8080
        """,
})
add("pytest", "assert_dict_diff", fs, ["pytest"],
    facts(["tests/test_config.py::test_merge_overrides_port", "tests/test_config.py::test_tags_order"],
          "AssertionError", "Differing items", at(fs, "tests/test_config.py", "assert merged =="), 2))

# a 1000-element list with one wrong element (issue 11): -vv prints both lists in full
fs = P({
    "src/pkg/ids.py": """
        def ids(n):
            out = list(range(n))
            out[437] = -1  # bug
            return out
        """,
    "tests/test_ids.py": """
        from pkg.ids import ids


        def test_ids_are_consecutive():
            assert ids(1000) == list(range(1000))
        """,
})
for name, argv in (("long_list", ["pytest"]), ("long_list_vv", ["pytest", "-vv"])):
    add("pytest", name, fs, argv,
        facts(["tests/test_ids.py::test_ids_are_consecutive"], "AssertionError",
              "At index 437 diff: -1 != 437", at(fs, "tests/test_ids.py", "assert ids(1000)"), 1))

# pytest 9 subtests (unittest subTest): one label fails; -q puts "N subtests passed" in the closing line
fs = P({
    "src/pkg/parse.py": """
        def parse(text):
            key, _, value = text.partition("=")
            value = value.strip()
            if value.count('"') != 2:  # bug: a multi-line string has three quotes on each side
                raise ValueError(f"invalid: {text!r}")
            return {key.strip(): value.strip('"')}
        """,
    "tests/test_data.py": """
        import unittest

        from pkg.parse import parse

        VALID = {f"plain-{i:02}": f'k{i} = "v{i}"' for i in range(30)}
        VALID["multiline-quotes-01"] = "k = " + '"' * 3 + "a" + '"' * 3


        class TestData(unittest.TestCase):
            def test_valid(self):
                for label, text in VALID.items():
                    with self.subTest(msg=label):
                        self.assertTrue(parse(text))
        """,
})
add("pytest", "subtests", fs, ["pytest", "-q"],
    facts(["tests/test_data.py::TestData::test_valid [multiline-quotes-01]"], "ValueError",
          "invalid: 'k = ", at(fs, "src/pkg/parse.py", "raise ValueError"), 1))

# exception deep in a call chain: a.py -> b.py -> c.py raises TypeError
fs = P({
    "src/pkg/a.py": """
        from pkg.b import transform


        def run(rows):
            cleaned = [r for r in rows if r is not None]
            return transform(cleaned)
        """,
    "src/pkg/b.py": """
        from pkg.c import scale


        def transform(values):
            out = []
            for v in values:
                out.append(scale(v))
            return out
        """,
    "src/pkg/c.py": """
        UNIT = "px"


        def scale(value, factor=2):
            scaled = value * factor
            return scaled + UNIT
        """,
    "tests/test_pipeline.py": """
        from pkg.a import run


        def test_run_scales_values():
            assert run([1, None, 3]) == ["2px", "6px"]


        def test_run_empty():
            assert run([]) == []
        """,
})
add("pytest", "deep_exception", fs, ["pytest"],
    facts(["tests/test_pipeline.py::test_run_scales_values"], "TypeError",
          "unsupported operand type(s) for +: 'int' and 'str'", at(fs, "src/pkg/c.py", "return scaled + UNIT"), 1))
add("pytest", "tb_long", fs, ["pytest", "--tb=long"],
    facts(["tests/test_pipeline.py::test_run_scales_values"], "TypeError",
          "unsupported operand type(s) for +: 'int' and 'str'", at(fs, "src/pkg/c.py", "return scaled + UNIT"), 1))
add("pytest", "tb_native", fs, ["pytest", "--tb=native"],
    facts(["tests/test_pipeline.py::test_run_scales_values"], "TypeError",
          "unsupported operand type(s) for +: 'int' and 'str'", at(fs, "src/pkg/c.py", "return scaled + UNIT"), 1))
add("pytest", "tb_line", fs, ["pytest", "--tb=line"],
    facts(["tests/test_pipeline.py::test_run_scales_values"], "TypeError",
          "unsupported operand type(s) for +: 'int' and 'str'", at(fs, "src/pkg/c.py", "return scaled + UNIT"), 1))
add("pytest", "quiet", fs, ["pytest", "-q"],
    facts(["tests/test_pipeline.py::test_run_scales_values"], "TypeError",
          "unsupported operand type(s) for +: 'int' and 'str'", at(fs, "src/pkg/c.py", "return scaled + UNIT"), 1))
add("pytest", "verbose_rA", fs, ["pytest", "-v", "-rA"],
    facts(["tests/test_pipeline.py::test_run_scales_values"], "TypeError",
          "unsupported operand type(s) for +: 'int' and 'str'", at(fs, "src/pkg/c.py", "return scaled + UNIT"), 1))

# collection error: ImportError of a name missing from a project module
fs = P({
    "src/pkg/utils.py": """
        def slugify(text):
            return text.lower().replace(" ", "-")
        """,
    "tests/test_utils.py": """
        from pkg.utils import slugify, titlecase


        def test_slugify():
            assert slugify("A B") == "a-b"
        """,
    "tests/test_ok.py": """
        def test_ok():
            assert True
        """,
})
add("pytest", "collection_import_error", fs, ["pytest"],
    facts(["tests/test_utils.py"], "ImportError", "cannot import name 'titlecase' from 'pkg.utils'",
          at(fs, "tests/test_utils.py", "from pkg.utils import"), 1))

# misspelt project module
fs = P({
    "src/pkg/utils.py": """
        def slugify(text):
            return text.lower().replace(" ", "-")
        """,
    "tests/test_utils.py": """
        from pkg.utlis import slugify


        def test_slugify():
            assert slugify("A B") == "a-b"
        """,
})
add("pytest", "misspelt_project_module", fs, ["pytest"],
    facts(["tests/test_utils.py"], "ModuleNotFoundError", "No module named 'pkg.utlis'",
          at(fs, "tests/test_utils.py", "from pkg.utlis import"), 1))

# third-party module missing (env failure)
fs = P({
    "src/pkg/db.py": """
        import psycopg2


        def connect(dsn):
            return psycopg2.connect(dsn)
        """,
    "tests/test_db.py": """
        from pkg.db import connect


        def test_connect_is_callable():
            assert callable(connect)
        """,
})
add("pytest", "missing_third_party", fs, ["pytest"],
    facts(["tests/test_db.py"], "ModuleNotFoundError", "No module named 'psycopg2'",
          at(fs, "src/pkg/db.py", "import psycopg2"), 1))

# syntax error in a project module
fs = P({
    "src/pkg/broken.py": """
        def total(items):
            result = 0
            for item in items
                result += item
            return result
        """,
    "tests/test_broken.py": """
        from pkg.broken import total


        def test_total():
            assert total([1, 2]) == 3
        """,
})
add("pytest", "syntax_error", fs, ["pytest"],
    facts(["tests/test_broken.py"], "SyntaxError", "expected ':'",
          at(fs, "src/pkg/broken.py", "for item in items"), 1))

# 40-failure cascade from one root bug
cascade_core = """
    RATES = {"USD": 1.0, "EUR": 0.92, "GBP": 0.79, "JPY": 151.3}


    def rate_for(currency):
        code = currency.lower()
        return RATES[code]
    """
cascade_files = {
    "src/pkg/core.py": cascade_core,
    "src/pkg/pricing.py": """
        from pkg.core import rate_for


        def convert(amount, currency):
            return round(amount * rate_for(currency), 2)
        """,
    "tests/test_convert.py": """
        import pytest

        from pkg.pricing import convert


        @pytest.mark.parametrize("amount", list(range(1, 16)))
        def test_convert_usd(amount):
            assert convert(amount, "USD") == amount


        @pytest.mark.parametrize("currency", ["EUR", "GBP", "JPY", "usd", "eur"])
        def test_convert_positive(currency):
            assert convert(10, currency) > 0
        """,
    "tests/test_invoice.py": "\n".join(
        ["from pkg.pricing import convert", ""]
        + [f"\ndef test_invoice_line_{i}():\n    assert convert({i}, \"EUR\") >= 0\n" for i in range(10)]),
    "tests/test_report.py": """
        import pytest

        from pkg.pricing import convert

        CASES = [(n, c) for n in (5, 50) for c in ("USD", "EUR", "GBP", "JPY", "USD")]


        @pytest.mark.parametrize("amount,currency", CASES)
        def test_report_row(amount, currency):
            assert isinstance(convert(amount, currency), float)


        def test_report_header():
            assert "amount" in "amount,currency"
        """,
}
fs = P(cascade_files)
add("pytest", "cascade_40", fs, ["pytest"],
    facts(["tests/test_convert.py::test_convert_usd[1]"], "KeyError", "'usd'",
          at(fs, "src/pkg/core.py", "return RATES[code]"), 40))
add("pytest", "cascade_40_tb_short", fs, ["pytest", "--tb=short"],
    facts(["tests/test_convert.py::test_convert_usd[1]"], "KeyError", "'usd'",
          at(fs, "src/pkg/core.py", "return RATES[code]"), 40))
add("pytest", "cascade_40_xdist", fs, ["pytest", "-n", "2", "--tb=short"],
    facts(["tests/test_convert.py::test_convert_usd[1]"], "KeyError", "'usd'",
          at(fs, "src/pkg/core.py", "return RATES[code]"), 40))

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

# --------------------------------------------------------------------------
# unittest
# --------------------------------------------------------------------------
fs = {
    "calc.py": D("""
        def add(a, b):
            return a + b + 1


        def div(a, b):
            return a / b
        """),
    "tests/__init__.py": "",
    "tests/test_calc.py": D("""
        import unittest

        from calc import add, div


        class CalcTest(unittest.TestCase):
            def test_add(self):
                self.assertEqual(add(2, 2), 4)

            def test_div(self):
                self.assertEqual(div(1, 0), 0)

            def test_list(self):
                self.assertListEqual([1, 2, 3], [1, 2, 4])

            def test_ok(self):
                self.assertTrue(True)


        if __name__ == "__main__":
            unittest.main()
        """),
}
add("unittest", "failure_and_error", fs, ["python", "-m", "unittest"],
    facts(["tests.test_calc.CalcTest.test_add", "tests.test_calc.CalcTest.test_div",
           "tests.test_calc.CalcTest.test_list"], "AssertionError", "5 != 4",
          at(fs, "tests/test_calc.py", "self.assertEqual(add(2, 2), 4)"), 3),
    version=["python", "--version"])
add("unittest", "verbose", fs, ["python", "-m", "unittest", "-v"],
    facts(["tests.test_calc.CalcTest.test_add", "tests.test_calc.CalcTest.test_div",
           "tests.test_calc.CalcTest.test_list"], "AssertionError", "5 != 4",
          at(fs, "tests/test_calc.py", "self.assertEqual(add(2, 2), 4)"), 3),
    version=["python", "--version"])

# --------------------------------------------------------------------------
# mypy
# --------------------------------------------------------------------------
fs = {
    "pyproject.toml": D("""
        [tool.mypy]
        files = ["src"]
        """),
    "src/app/__init__.py": "",
    "src/app/models.py": D("""
        from dataclasses import dataclass


        @dataclass
        class User:
            name: str
            age: int


        def average(values: list[float]) -> float:
            return sum(values) / len(values)


        def make_user(name: str) -> User:
            return User(name, "unknown")
        """),
    "src/app/service.py": D("""
        from typing import Optional

        import requests_nonexistent_pkg

        from app.models import User, average, make_user


        def ages(users: list[User]) -> list[int]:
            return [u.age for u in users]


        def mean_age(users: list[User]) -> float:
            return average(ages(users))


        def find(users: list[User], name: str) -> Optional[User]:
            for u in users:
                if u.name == name:
                    return u
            return None


        def greet(users: list[User]) -> str:
            user = find(users, "ada")
            return "hi " + user.name


        def count() -> int:
            return "3"
        """),
}
add("mypy", "errors_with_notes", fs, ["mypy"],
    facts(["arg-type", "import-not-found", "union-attr", "return-value"], "arg-type",
          'Argument 1 to "average" has incompatible type "list[int]"; expected "list[float]"',
          at(fs, "src/app/service.py", "return average(ages(users))"), 5),
    env={"MYPYPATH": "src"})
fs2 = {
    "pyproject.toml": "",
    "lib.py": D("""
        import json


        def load(path):
            with open(path) as fh:
                return json.load(fh)


        def port(cfg: dict) -> int:
            return cfg["port"]


        class Box:
            def __init__(self, items):
                self.items = items

            def first(self) -> int:
                return self.items[0]
        """),
}
add("mypy", "strict", fs2, ["mypy", "--strict", "lib.py"],
    facts(["no-untyped-def", "type-arg", "no-any-return"], "no-untyped-def",
          "Function is missing a type annotation", at(fs2, "lib.py", "def load(path):"), 5))
fs3 = {
    "good.py": "def f(x: int) -> int:\n    return x\n",
    "bad.py": D("""
        def broken(x: int) -> int
            return x + 1
        """),
}
add("mypy", "syntax_error", fs3, ["mypy", "good.py", "bad.py"],
    facts(["syntax"], "syntax", "Expected `:`, found newline", "bad.py:1", 1))
fs4 = {
    "ok.py": D("""
        def f(x: int) -> int:
            return x * 2
        """),
}
add("mypy", "clean", fs4, ["mypy", "ok.py"], facts([], None, "Success: no issues found in 1 source file", None, 0))
add("mypy", "pretty", fs, ["mypy", "--pretty"],
    facts(["arg-type", "import-not-found", "union-attr", "return-value"], "arg-type",
          'Argument 1 to "average" has incompatible type', at(fs, "src/app/service.py", "return average(ages(users))"), 5),
    env={"MYPYPATH": "src"})

# --------------------------------------------------------------------------
# ruff, flake8, black
# --------------------------------------------------------------------------
LINT_PY = {
    "pyproject.toml": D("""
        [project]
        name = "lintme"
        version = "0.1.0"

        [tool.ruff]
        line-length = 88

        [tool.ruff.lint]
        select = ["E", "F", "W", "B", "I"]
        """),
    "src/lintme/__init__.py": "",
    "src/lintme/core.py": D("""
        import sys
        import os
        import json


        def load(path, cache={}):
            if path in cache:
                return cache[path]
            with open(path) as fh:
                data = json.load(fh)
            cache[path] = data
            return data


        def describe(value):
            message = "this is a very long line that goes well past the configured limit of eighty-eight characters"
            if value == None:
                return undefined_name
            return message
        """),
    "src/lintme/util.py": D("""
        def f(x):
            l = [i for i in range(x)]
            try:
                return l[0]
            except:
                return None
        """),
}
ruff_facts = facts(["F401", "B006", "E501", "E711", "F821", "E741", "E722", "I001"], "F401",
                   "`sys` imported but unused", at(LINT_PY, "src/lintme/core.py", "import sys"), None)
ruff_stats_facts = dict(ruff_facts, message="unused-import", frame=None)
add("ruff", "check_default", LINT_PY, ["ruff", "check"], ruff_facts)
add("ruff", "check_concise", LINT_PY, ["ruff", "check", "--output-format=concise"], ruff_facts)
add("ruff", "check_full", LINT_PY, ["ruff", "check", "--output-format=full"], ruff_facts)
add("ruff", "check_json", LINT_PY, ["ruff", "check", "--output-format=json"], ruff_facts)
add("ruff", "check_statistics", LINT_PY, ["ruff", "check", "--statistics"], ruff_stats_facts)
FMT_PY = {
    "pyproject.toml": "[project]\nname = \"fmt\"\nversion = \"0\"\n",
    "pkg/a.py": "x = {  'a':1,\n'b':2}\ndef f( y ):\n  return y\n",
    "pkg/b.py": "def ok(x):\n    return x\n",
    "pkg/c.py": "import os\nprint( os.sep )\n",
}
add("ruff", "format_check", FMT_PY, ["ruff", "format", "--check"],
    facts(["pkg/a.py", "pkg/c.py"], "unformatted", "File would be reformatted", None, 2))
add("ruff", "format_diff", FMT_PY, ["ruff", "format", "--diff"],
    facts(["pkg/a.py", "pkg/c.py"], "would be reformatted", "2 files would be reformatted", None, 2))
SYN_PY = {"bad.py": "def f(:\n    pass\n", "ok.py": "x = 1\n"}
add("ruff", "check_syntax_error", SYN_PY, ["ruff", "check"],
    facts(["invalid-syntax"], "invalid-syntax", "Expected a parameter or the end of the parameter list", "bad.py:1", 2))

add("flake8", "errors", LINT_PY, ["flake8", "src"],
    facts(["F401", "E501", "E711", "F821", "E741", "E722"], "F401", "'sys' imported but unused",
          at(LINT_PY, "src/lintme/core.py", "import sys"), None))
add("black", "check", FMT_PY, ["black", "--check", "pkg"],
    facts(["pkg/a.py", "pkg/c.py"], "would reformat", "would reformat", None, 2),
    version=["black", "--version"])
add("black", "check_diff", FMT_PY, ["black", "--check", "--diff", "pkg"],
    facts(["pkg/a.py", "pkg/c.py"], "would reformat", "2 files would be reformatted", None, 2))
add("black", "syntax_error", SYN_PY, ["black", "--check", "."],
    facts(["bad.py"], "cannot parse", "ParseError: bad input", "bad.py:1", 1))

# --------------------------------------------------------------------------
# pyright
# --------------------------------------------------------------------------
fs = {
    "pyrightconfig.json": '{\n  "include": ["src"],\n  "pythonVersion": "3.11"\n}\n',
    "src/app.py": D("""
        from typing import Optional


        def parse(s: str) -> int:
            return s


        def first(xs: list[int]) -> Optional[int]:
            return xs[0] if xs else None


        def use() -> int:
            value = first([1])
            return value + 1


        def call() -> None:
            parse(42)
            missing_function()
        """),
    "src/other.py": D("""
        import not_a_real_module


        class A:
            x: int = "zero"
        """),
}
add("pyright", "errors", fs, ["pyright"],
    facts(["reportReturnType", "reportOptionalOperand", "reportArgumentType", "reportUndefinedVariable",
           "reportMissingImports", "reportAssignmentType"], "reportReturnType",
          'Type "str" is not assignable to return type "int"', at(fs, "src/app.py", "    return s"), 6))
add("pyright", "json", fs, ["pyright", "--outputjson"],
    facts(["reportReturnType", "reportOptionalOperand", "reportArgumentType", "reportUndefinedVariable",
           "reportMissingImports", "reportAssignmentType"], "reportReturnType",
          'Type \\"str\\" is not assignable to return type \\"int\\"', None, 6))

# --------------------------------------------------------------------------
# TypeScript / eslint / prettier / jest / vitest / node:test
# --------------------------------------------------------------------------
fs = {
    "package.json": '{\n  "name": "tsdemo",\n  "private": true\n}\n',
    "tsconfig.json": D("""
        {
          "compilerOptions": {
            "target": "ES2020",
            "module": "commonjs",
            "strict": true,
            "noEmit": true
          },
          "include": ["src"]
        }
        """),
    "src/user.ts": D("""
        export interface User {
          id: number;
          name: string;
        }

        export function makeUser(name: string): User {
          return { id: "1", name };
        }
        """),
    "src/main.ts": D("""
        import { makeUser, User } from "./user";

        function greet(u: User): string {
          return "hi " + u.nam;
        }

        const count: number = makeUser("ada").name;
        greet(makeUser(42));
        console.log(count);
        """),
}
ts_facts = facts(["TS2322", "TS2551", "TS2345"], "TS2322", "Type 'string' is not assignable to type 'number'.",
                 at(fs, "src/user.ts", 'return { id: "1", name };'), 4)
add("tsc", "plain", fs, ["tsc", "-p", ".", "--pretty", "false"], ts_facts)
add("tsc", "pretty", fs, ["tsc", "-p", ".", "--pretty"], ts_facts)
add("tsc", "default", fs, ["tsc", "-p", "."], ts_facts)

fs = {
    "package.json": '{\n  "name": "lintdemo",\n  "private": true,\n  "type": "module"\n}\n',
    "eslint.config.js": D("""
        import js from "@eslint/js";

        export default [
          js.configs.recommended,
          {
            languageOptions: {
              ecmaVersion: 2022,
              sourceType: "module",
              globals: { console: "readonly" },
            },
            rules: {
              "no-unused-vars": "warn",
              eqeqeq: "error",
              "prefer-const": "warn",
            },
          },
        ];
        """),
    "src/app.js": D("""
        import { helper } from "./helper.js";

        let total = 0;
        const unused = 42;

        export function check(value) {
          if (value == null) {
            return undefinedThing;
          }
          total += helper(value);
          return total;
        }
        """),
    "src/helper.js": D("""
        export function helper(x) {
          let y = x * 2;
          return y;
        }
        """),
}
add("eslint", "errors_and_warnings", fs, ["eslint", "."],
    facts(["eqeqeq", "no-undef", "no-unused-vars", "prefer-const"], "eqeqeq",
          "Expected '===' and instead saw '=='", at(fs, "src/app.js", "if (value == null)"), 4),
    link_node_modules=True)
add("eslint", "json", fs, ["eslint", "--format", "json", "."],
    facts(["eqeqeq", "no-undef", "no-unused-vars", "prefer-const"], "eqeqeq",
          "Expected '===' and instead saw '=='.", None, 4),
    link_node_modules=True)
fs_pr = {
    "package.json": '{\n  "name": "fmtdemo",\n  "private": true\n}\n',
    "src/a.js": "const x = {a:1,\n  b:2}\nfunction f( y ){return y}\n",
    "src/b.js": "export const ok = 1;\n",
    "src/c.ts": "let s:string='x'\n",
}
add("prettier", "check", fs_pr, ["prettier", "--check", "src"],
    facts(["src/a.js", "src/c.ts"], "Code style issues", "Code style issues found in 2 files", None, 2))

JEST_SRC = D("""
    function parseUser(line) {
      const [name, age] = line.split(":");
      return { name, age, tags: [] };
    }

    function loadConfig(raw) {
      return { port: raw.port || 80 };
    }

    module.exports = { parseUser, loadConfig };
    """)
fs = {
    "package.json": '{\n  "name": "jestdemo",\n  "private": true\n}\n',
    "src/user.js": JEST_SRC,
    "test/user.test.js": D("""
        const { parseUser, loadConfig } = require("../src/user");

        describe("parseUser", () => {
          test("splits name and age", () => {
            expect(parseUser("ada:36")).toEqual({ name: "ada", age: 36, tags: [] });
          });

          test("keeps the name", () => {
            expect(parseUser("bob:1").name).toBe("bob");
          });
        });

        test("loadConfig defaults the port", () => {
          expect(loadConfig(null).port).toBe(80);
        });
        """),
}
add("jest", "failures", fs, ["jest"],
    facts(["parseUser › splits name and age", "loadConfig defaults the port"], "toEqual",
          "expect(received).toEqual(expected)", at(fs, "test/user.test.js", "toEqual({ name"), 2))
add("jest", "ci_verbose", fs, ["jest", "--ci", "--verbose"],
    facts(["parseUser › splits name and age", "loadConfig defaults the port"], "toEqual",
          "expect(received).toEqual(expected)", at(fs, "test/user.test.js", "toEqual({ name"), 2))

# a jest worker killed by a signal mid-run (seed 003: killed, never "0 failures")
fs = {
    "package.json": '{\n  "name": "jestkill",\n  "private": true\n}\n',
    "test/dies.test.js": 'test("dies", () => {\n  process.kill(process.pid, "SIGKILL");\n});\n',
    **{f"test/ok{i}.test.js": f'test("ok {i}", () => {{\n  expect({i}).toBe({i});\n}});\n' for i in (1, 2, 3)},
}
add("jest", "worker_killed", fs, ["jest", "-w", "2"],
    facts(["test/dies.test.js"], None, "was terminated by another process: signal=SIGKILL", None, None,
          killed=True))

fs = {
    "package.json": '{\n  "name": "vitestdemo",\n  "private": true,\n  "type": "module"\n}\n',
    "src/user.js": JEST_SRC.replace("module.exports = { parseUser, loadConfig };", "export { parseUser, loadConfig };"),
    "test/user.test.js": D("""
        import { describe, expect, test } from "vitest";
        import { loadConfig, parseUser } from "../src/user.js";

        describe("parseUser", () => {
          test("splits name and age", () => {
            expect(parseUser("ada:36")).toEqual({ name: "ada", age: 36, tags: [] });
          });

          test("keeps the name", () => {
            expect(parseUser("bob:1").name).toBe("bob");
          });
        });

        test("loadConfig defaults the port", () => {
          expect(loadConfig(null).port).toBe(80);
        });
        """),
}
add("vitest", "failures", fs, ["vitest", "run"],
    facts(["test/user.test.js > parseUser > splits name and age", "test/user.test.js > loadConfig defaults the port"],
          "AssertionError", "expected { name: 'ada', age: '36', tags: [] } to deeply equal { name: 'ada', age: 36, tags: [] }",
          at(fs, "test/user.test.js", "toEqual({ name"), 2),
    link_node_modules=True)

fs = {
    "package.json": '{\n  "name": "nodetestdemo",\n  "private": true\n}\n',
    "src/stack.js": D("""
        class Stack {
          constructor() { this.items = []; }
          push(x) { this.items.push(x); }
          pop() { return this.items.shift(); }
          peek() { return this.items.at(-1).value; }
        }
        module.exports = { Stack };
        """),
    "test/stack.test.js": D("""
        const test = require("node:test");
        const assert = require("node:assert");
        const { Stack } = require("../src/stack");

        test("pop returns last pushed", () => {
          const s = new Stack();
          s.push(1);
          s.push(2);
          assert.strictEqual(s.pop(), 2);
        });

        test("items deep equal", () => {
          const s = new Stack();
          s.push({ a: 1 });
          assert.deepStrictEqual(s.items, [{ a: 2 }]);
        });

        test("peek on empty", () => {
          const s = new Stack();
          s.peek();
        });

        test("push works", () => {
          const s = new Stack();
          s.push(3);
          assert.strictEqual(s.items.length, 1);
        });
        """),
}
nt_facts = facts(["pop returns last pushed", "items deep equal", "peek on empty"], "AssertionError",
                 "Expected values to be strictly equal", at(fs, "test/stack.test.js", "assert.strictEqual(s.pop(), 2)"), 3)
add("node-test", "spec", fs, ["node", "--test", "--test-reporter=spec"], nt_facts)
add("node-test", "tap", fs, ["node", "--test", "--test-reporter=tap"], nt_facts)
add("node-test", "default", fs, ["node", "--test"], nt_facts)

# a test file killed by a signal: node reports it as one failing "test" named by its path
fs = {
    "package.json": '{\n  "name": "ntkill",\n  "private": true\n}\n',
    "test/a.test.js": D("""
        const test = require("node:test");
        test("ok one", () => {});
        test("dies", () => { process.kill(process.pid, "SIGSEGV"); });
        """),
    "test/b.test.js": D("""
        const test = require("node:test");
        test("b passes", () => {});
        """),
}
add("node-test", "file_killed", fs, ["node", "--test"],
    facts(["test/a.test.js"], "SIGSEGV", "test failed", "test/a.test.js:1", 1, killed=True))
add("node-test", "file_killed_spec", fs, ["node", "--test", "--test-reporter=spec"],
    facts(["test/a.test.js"], None, "test failed", None, 1, killed=True))

# a test file that fails to LOAD (a SyntaxError in the code under test): exit 1, not a kill
fs = {
    "package.json": '{\n  "name": "ntload",\n  "private": true\n}\n',
    "src/calc.js": "function add(a, b) {\n  return a + b;\n}\n\nfunction mul(a, b) {\n"
                   "  return a * (b;\n}\n\nmodule.exports = { add, mul };\n",
    "test/calc.test.js": D("""
        const test = require("node:test");
        const assert = require("node:assert");
        const { add } = require("../src/calc");

        test("adds", () => {
          assert.strictEqual(add(2, 2), 4);
        });
        """),
    "test/other.test.js": D("""
        const test = require("node:test");
        const assert = require("node:assert");

        test("truth", () => {
          assert.strictEqual(1, 1);
        });
        """),
}
load_facts = facts(["test/calc.test.js"], "SyntaxError", "Unexpected token ';'", "src/calc.js:6", 1)
add("node-test", "load_error", fs, ["node", "--test"], load_facts)
add("node-test", "load_error_spec", fs, ["node", "--test", "--test-reporter=spec"], load_facts)

# ES modules: node prints file:/// URLs and util.inspect properties after the stack
fs = {
    "package.json": '{\n  "name": "ntesm",\n  "private": true,\n  "type": "module"\n}\n',
    "src/range.js": "export function range(n) {\n  const out = [];\n"
                    "  for (let i = 0; i <= n; i++) out.push(i);\n  return out;\n}\n",
    "test/range.test.js": D("""
        import test from "node:test";
        import assert from "node:assert";
        import { range } from "../src/range.js";

        test("range of 3", () => {
          assert.strictEqual(range(3).length, 3);
        });

        test("range of 0", () => {
          assert.deepStrictEqual(range(0), []);
        });
        """),
}
esm_facts = facts(["range of 3", "range of 0"], "AssertionError", "Expected values to be strictly equal",
                  at(fs, "test/range.test.js", "assert.strictEqual(range(3)"), 2)
add("node-test", "esm_spec", fs, ["node", "--test", "--test-reporter=spec"], esm_facts)

# --------------------------------------------------------------------------
# mocha, uvu, ava, tap (node-tap): one project, the same two failures in each runner's words
# --------------------------------------------------------------------------
CALC_JS = D("""
    function add(a, b) {
      return a - b;
    }

    function first(items) {
      return items[0].value;
    }

    module.exports = { add, first };
    """)
JS_PKG = '{\n  "name": "jscalc",\n  "private": true\n}\n'
fs = {
    "package.json": JS_PKG,
    "src/calc.js": CALC_JS,
    "test/calc.test.js": D("""
        const assert = require("node:assert");
        const { add, first } = require("../src/calc");

        describe("calc", () => {
          it("adds two numbers", () => {
            assert.strictEqual(add(2, 2), 4);
          });

          it("takes the first value", () => {
            assert.strictEqual(first([]), undefined);
          });

          it("adds zero", () => {
            assert.strictEqual(add(0, 0), 0);
          });

          it.skip("multiplies", () => {});
        });
        """),
}
mocha_facts = facts(["calc adds two numbers", "calc takes the first value"], "AssertionError",
                    "Expected values to be strictly equal", at(fs, "test/calc.test.js", "add(2, 2), 4"), 2,
                    counts={"passed": 1, "failed": 2, "skipped": 1})
add("mocha", "spec", fs, ["mocha"], mocha_facts, link_node_modules=True)
add("mocha", "json", fs, ["mocha", "--reporter", "json"],
    dict(mocha_facts, message="Expected values to be strictly equal"), link_node_modules=True)
fs_green = dict(fs, **{"src/calc.js": CALC_JS.replace("a - b", "a + b").replace(
    "items[0].value", "items.length ? items[0].value : undefined")})
add("mocha", "green", fs_green, ["mocha"], facts([], None, None, None, 0,
    counts={"passed": 3, "failed": 0, "skipped": 1}), link_node_modules=True)

UVU_TEST = D("""
    const { test } = require("uvu");
    const assert = require("uvu/assert");
    const { add, first } = require("../src/calc");

    test("adds two numbers", () => {
      assert.is(add(2, 2), 4);
    });

    test("takes the first value", () => {
      assert.is(first([]), undefined);
    });

    test("adds zero", () => {
      assert.is(add(0, 0), 0);
    });

    test.skip("multiplies", () => {});

    test.run();
    """)
fs = {"package.json": JS_PKG, "src/calc.js": CALC_JS, "tests/calc.js": UVU_TEST}
add("uvu", "failures", fs, ["uvu", "tests"],
    facts(["adds two numbers", "takes the first value"], None, "Expected values to be strictly equal",
          at(fs, "tests/calc.js", "assert.is(add(2, 2), 4)"), 2,
          counts={"passed": 1, "failed": 2, "skipped": 1}),
    link_node_modules=True)
fs_green = dict(fs, **{"src/calc.js": fs_green["src/calc.js"]})
add("uvu", "green", fs_green, ["uvu", "tests"], facts([], None, None, None, 0,
    counts={"passed": 3, "failed": 0, "skipped": 1}), link_node_modules=True)

AVA_TEST = D("""
    const test = require("ava");
    const { add, first } = require("../src/calc");

    test("adds two numbers", (t) => {
      t.is(add(2, 2), 4);
    });

    test("takes the first value", (t) => {
      t.is(first([]), undefined);
    });

    test("adds zero", (t) => {
      t.is(add(0, 0), 0);
    });

    test.skip("multiplies", (t) => {
      t.pass();
    });
    """)
fs = {"package.json": JS_PKG, "src/calc.js": CALC_JS, "test/calc.test.js": AVA_TEST}
add("ava", "failures", fs, ["ava"],
    facts(["adds two numbers", "takes the first value"], None, "Difference (- actual, + expected)",
          at(fs, "test/calc.test.js", "t.is(add(2, 2), 4)"), 2,
          counts={"passed": 1, "failed": 2, "skipped": 1}),
    link_node_modules=True)
fs_green = dict(fs, **{"src/calc.js": fs_green["src/calc.js"]})
add("ava", "green", fs_green, ["ava"], facts([], None, None, None, 0,
    counts={"passed": 3, "failed": 0, "skipped": 1}), link_node_modules=True)

TAP_TEST = D("""
    const t = require("tap");
    const { add, first } = require("../src/calc");

    t.test("adds two numbers", async (t) => {
      t.equal(add(2, 2), 4);
    });

    t.test("takes the first value", async (t) => {
      t.equal(first([]), undefined);
    });

    t.test("adds zero", async (t) => {
      t.equal(add(0, 0), 0);
    });

    t.test("multiplies", { skip: "later" }, async () => {});
    """)
fs = {"package.json": JS_PKG, "src/calc.js": CALC_JS, "test/calc.test.js": TAP_TEST}
add("tap", "failures", fs, ["tap", "--disable-coverage", "test/calc.test.js"],
    facts(["adds two numbers", "takes the first value"], None, "should be equal",
          at(fs, "test/calc.test.js", "t.equal(add(2, 2), 4)"), 2,
          counts={"passed": 1, "failed": 2, "skipped": 1}),
    link_node_modules=True)
fs_green = dict(fs, **{"src/calc.js": fs_green["src/calc.js"]})
add("tap", "green", fs_green, ["tap", "--disable-coverage", "test/calc.test.js"],
    facts([], None, None, None, 0, counts={"passed": 3, "failed": 0, "skipped": 1}),
    link_node_modules=True)

# --------------------------------------------------------------------------
# cargo
# --------------------------------------------------------------------------
CARGO_TOML = D("""
    [package]
    name = "glcap"
    version = "0.1.0"
    edition = "2021"

    [dependencies]
    """)
CARGO_V = ["cargo", "--version"]


def C(files: dict[str, str]) -> dict[str, str]:
    out = {"Cargo.toml": CARGO_TOML}
    out.update({k: D(v) for k, v in files.items()})
    return out


fs = C({
    "src/lib.rs": """
        pub fn add(a: i32, b: i32) -> i32 {
            a - b
        }

        pub fn words(s: &str) -> Vec<String> {
            s.split(' ').map(|w| w.to_string()).collect()
        }

        #[cfg(test)]
        mod tests {
            use super::*;

            #[test]
            fn adds() {
                assert_eq!(add(2, 2), 4);
            }

            #[test]
            fn splits_words() {
                assert_eq!(words("a  b"), vec!["a".to_string(), "b".to_string()], "double space");
            }

            #[test]
            fn passes() {
                assert!(add(1, 0) == 1);
            }
        }
        """,
})
add("cargo", "test_assert_eq", fs, ["cargo", "test"],
    facts(["tests::adds", "tests::splits_words"], "panic", "assertion `left == right` failed",
          at(fs, "src/lib.rs", "assert_eq!(add(2, 2), 4);"), 2), version=CARGO_V, timeout=300)
add("cargo", "test_quiet", fs, ["cargo", "test", "-q"],
    facts(["tests::adds", "tests::splits_words"], "panic", "assertion `left == right` failed",
          at(fs, "src/lib.rs", "assert_eq!(add(2, 2), 4);"), 2), version=CARGO_V, timeout=300)
fs = C({
    "src/lib.rs": """
        pub mod parser;

        #[cfg(test)]
        mod tests {
            use super::parser::header;

            #[test]
            fn reads_header() {
                assert_eq!(header(&[]), 7);
            }
        }
        """,
    "src/parser.rs": """
        pub fn header(bytes: &[u8]) -> u8 {
            let version = bytes[3];
            version
        }

        pub fn parse_port(s: &str) -> u16 {
            s.parse().unwrap()
        }
        """,
    "tests/integration.rs": """
        use glcap::parser::parse_port;

        #[test]
        fn port_from_text() {
            assert_eq!(parse_port("80a"), 80);
        }

        #[test]
        #[should_panic(expected = "boom")]
        fn expects_panic() {
            let _ = parse_port("1");
        }
        """,
})
add("cargo", "test_panic", fs, ["cargo", "test", "--no-fail-fast"],
    facts(["tests::reads_header", "port_from_text", "expects_panic"], "panic",
          "index out of bounds: the len is 0 but the index is 3", at(fs, "src/parser.rs", "let version = bytes[3];"), 3),
    version=CARGO_V, timeout=300)
add("cargo", "test_panic_backtrace", fs, ["cargo", "test", "--no-fail-fast"],
    facts(["tests::reads_header", "port_from_text", "expects_panic"], "panic",
          "index out of bounds: the len is 0 but the index is 3", at(fs, "src/parser.rs", "let version = bytes[3];"), 3),
    version=CARGO_V, timeout=300, env={"RUST_BACKTRACE": "1"})
fs = C({
    "src/lib.rs": """
        pub fn checked() -> bool {
            true
        }

        #[cfg(test)]
        mod tests {
            #[test]
            fn fine() {
                assert!(super::checked());
            }

            #[test]
            fn aborts() {
                std::process::abort();
            }
        }
        """,
})
add("cargo", "test_abort", fs, ["cargo", "test"],
    facts(["tests::aborts"], "SIGABRT", "signal: 6, SIGABRT", at(fs, "src/lib.rs", "std::process::abort();"), 1,
          killed=True), version=CARGO_V, timeout=300)
fs = C({
    "src/lib.rs": """
        pub fn poke() -> i32 {
            let p: *mut i32 = std::ptr::null_mut();
            unsafe { p.write_volatile(1) };
            0
        }

        #[cfg(test)]
        mod tests {
            #[test]
            fn segfaults() {
                assert_eq!(super::poke(), 0);
            }
        }
        """,
})
add("cargo", "test_sigsegv", fs, ["cargo", "test"],
    facts(["tests::segfaults"], "SIGSEGV", "signal: 11, SIGSEGV", at(fs, "src/lib.rs", "p.write_volatile(1)"), 1,
          killed=True), version=CARGO_V, timeout=300)
fs = C({
    "src/main.rs": """
        fn parse(n: &str) -> i32 {
            n.len()
        }

        fn main() {
            let total: i32 = "five";
            println!("{} {}", total, parse("x"));
        }
        """,
})
add("cargo", "build_e0308", fs, ["cargo", "build"],
    facts(["E0308"], "E0308", "mismatched types", at(fs, "src/main.rs", "    n.len()"), 2),
    version=["rustc", "--version"], requires=["cargo", "rustc"], timeout=300)
fs = C({
    "src/main.rs": """
        fn main() {
            let mut scores = vec![1, 2, 3];
            let first = &scores[0];
            scores.push(4);
            println!("{}", first);

            let name = String::from("ada");
            let moved = name;
            println!("{} {}", name, moved);
        }
        """,
})
add("cargo", "build_borrow", fs, ["cargo", "build"],
    facts(["E0502", "E0382"], "E0502",
          "cannot borrow `scores` as mutable because it is also borrowed as immutable",
          at(fs, "src/main.rs", "scores.push(4);"), 2),
    version=["rustc", "--version"], requires=["cargo", "rustc"], timeout=300)
fs = C({
    "src/lib.rs": """
        pub fn double(x: i32) -> i32 {
            x * 2
        }

        #[cfg(test)]
        mod tests {
            use super::*;

            #[test]
            fn doubles() {
                assert_eq!(tripple(2), 6);
            }
        }
        """,
})
add("cargo", "test_compile_error", fs, ["cargo", "test"],
    facts(["E0425"], "E0425", "cannot find function `tripple` in this scope",
          at(fs, "src/lib.rs", "assert_eq!(tripple(2), 6);"), 1), version=CARGO_V, timeout=300)
fs = C({
    "src/lib.rs": """
        pub fn is_empty_list(v: &Vec<i32>) -> bool {
            return v.len() == 0;
        }

        pub fn sum(v: &[i32]) -> i32 {
            let mut total = 0;
            for i in 0..v.len() {
                total = total + v[i];
            }
            total
        }
        """,
})
add("cargo", "clippy_warnings", fs, ["cargo", "clippy"],
    facts(["clippy::ptr_arg", "clippy::needless_return", "clippy::len_zero", "clippy::needless_range_loop"],
          "warning", "writing `&Vec` instead of `&[_]` involves a new object where a slice will do",
          at(fs, "src/lib.rs", "pub fn is_empty_list"), None),
    version=["cargo", "clippy", "--version"], requires=["cargo", "cargo-clippy"], timeout=300)
add("cargo", "clippy_deny", fs, ["cargo", "clippy", "--", "-D", "warnings"],
    facts(["clippy::ptr_arg", "clippy::needless_return", "clippy::len_zero", "clippy::needless_range_loop"],
          "error", "writing `&Vec` instead of `&[_]` involves a new object where a slice will do",
          at(fs, "src/lib.rs", "pub fn is_empty_list"), None),
    version=["cargo", "clippy", "--version"], requires=["cargo", "cargo-clippy"], timeout=300)

# the same error once per macro expansion: rustc prints it three times
fs = {
    "Cargo.toml": CARGO_TOML,
    "src/main.rs": D("""
        macro_rules! check {
            ($v:expr) => {
                let _n: i32 = $v.len();
            };
        }

        fn main() {
            check!("a");
            check!("bb");
            check!("ccc");
        }
        """),
}
add("cargo", "build_macro_repeat", fs, ["cargo", "build"],
    facts(["E0308"], "E0308", "mismatched types", at(fs, "src/main.rs", "let _n: i32"), 1), timeout=300)

# a note that points into the toolchain's own library (/rustc/<hash>/library/...)
fs = {
    "Cargo.toml": CARGO_TOML,
    "src/main.rs": D("""
        fn main() {
            let v: Vec<i32> = Vec::with_capacity("3");
            println!("{}", v.len());
        }
        """),
}
add("cargo", "build_std_note", fs, ["cargo", "build"],
    facts(["E0308"], "E0308", "mismatched types", at(fs, "src/main.rs", "with_capacity"), 1), timeout=300)

# --------------------------------------------------------------------------
# go
# --------------------------------------------------------------------------
GO_MOD = "module example.com/glcap\n\ngo 1.19\n"
GO_V = ["go", "version"]
fs = {
    "go.mod": GO_MOD,
    "calc.go": D("""
        package glcap

        func Add(a, b int) int {
        	return a - b
        }

        func Words(s string) []string {
        	out := []string{}
        	start := 0
        	for i := 0; i < len(s); i++ {
        		if s[i] == ' ' {
        			out = append(out, s[start:i])
        			start = i + 1
        		}
        	}
        	return out
        }
        """),
    "calc_test.go": D("""
        package glcap

        import "testing"

        func TestAdd(t *testing.T) {
        	if got := Add(2, 2); got != 4 {
        		t.Errorf("Add(2, 2) = %d; want 4", got)
        	}
        }

        func TestWords(t *testing.T) {
        	cases := []struct {
        		in   string
        		want int
        	}{{"a b", 2}, {"a", 1}}
        	for _, c := range cases {
        		t.Run(c.in, func(t *testing.T) {
        			if got := len(Words(c.in)); got != c.want {
        				t.Fatalf("len(Words(%q)) = %d; want %d", c.in, got, c.want)
        			}
        		})
        	}
        }

        func TestOK(t *testing.T) {}
        """),
}
# the leaf tests, as `go test -json` counts them: TestWords fails only because its subtests do
go_facts = facts(["TestAdd", "TestWords/a_b", "TestWords/a"], None, "Add(2, 2) = 0; want 4",
                 at(fs, "calc_test.go", 't.Errorf("Add(2, 2)'), 3)
add("go", "test_fail", fs, ["go", "test", "./..."], go_facts, version=GO_V)
add("go", "test_verbose", fs, ["go", "test", "-v", "./..."], go_facts, version=GO_V)
add("go", "test_json", fs, ["go", "test", "-json", "./..."], go_facts, version=GO_V)
# a suite that logs (t.Log) and skips (t.Skip): green, and the same with one failing test
LOG_SKIP_TEST = D("""
    package glcap

    import "testing"

    func TestAdd(t *testing.T) {
    	t.Log("checking 2 + 2")
    	if got := Add(2, 2); got != 4 {
    		t.Errorf("Add(2, 2) = %d; want 4", got)
    	}
    }

    func TestNeedsDatabase(t *testing.T) {
    	t.Skip("no database in this environment")
    }

    func TestTable(t *testing.T) {
    	for _, name := range []string{"fast", "slow"} {
    		name := name
    		t.Run(name, func(t *testing.T) {
    			t.Logf("case %s", name)
    			if name == "slow" {
    				t.Skip("slow case skipped")
    			}
    		})
    	}
    }
    """)
fs = {
    "go.mod": GO_MOD,
    "add.go": "package glcap\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n",
    "add_test.go": LOG_SKIP_TEST,
}
# leaf tests: TestTable is the parent of TestTable/fast (passed) and TestTable/slow (skipped)
green = facts([], None, None, None, 0, counts={"passed": 2, "failed": 0, "skipped": 2})
add("go", "log_skip_green_verbose", fs, ["go", "test", "-v", "./..."], green, version=GO_V)
add("go", "log_skip_green_json", fs, ["go", "test", "-json", "./..."], green, version=GO_V)
fs = dict(fs, **{"add.go": "package glcap\n\nfunc Add(a, b int) int {\n\treturn a * b + 1\n}\n"})
red = facts(["TestAdd"], None, "Add(2, 2) = 5; want 4", at(fs, "add_test.go", "t.Errorf("), 1,
            counts={"passed": 1, "failed": 1, "skipped": 2})
add("go", "log_skip_red", fs, ["go", "test", "./..."], dict(red, counts=None),  # not printed
    version=GO_V)
add("go", "log_skip_red_verbose", fs, ["go", "test", "-v", "./..."], red, version=GO_V)
add("go", "log_skip_red_json", fs, ["go", "test", "-json", "./..."], red, version=GO_V)
# two packages, one test name: a's TestX has subtests (TestX/one fails), b's TestX is a plain
# failing test. A parent is a parent within its own package only: b's TestX, TestY and TestZ are
# leaves that fail, pass and skip. Both failures say "got 1, want 2" on line 6 (go -json may print
# b first).
fs = {
    "go.mod": GO_MOD,
    "a/x_test.go": D("""
        package a

        import "testing"

        func TestX(t *testing.T) {
        	t.Run("one", func(t *testing.T) { t.Errorf("a: got %d, want %d", 1, 2) })
        	t.Run("two", func(t *testing.T) {})
        }

        func TestY(t *testing.T) {
        	t.Run("sub", func(t *testing.T) {})
        }

        func TestZ(t *testing.T) {
        	t.Run("sub", func(t *testing.T) { t.Skip("a: sub skipped") })
        }
        """),
    "b/x_test.go": D("""
        package b

        import "testing"

        func TestX(t *testing.T) {
        	t.Errorf("b: got %d, want %d", 1, 2)
        }

        func TestY(t *testing.T) {}

        func TestZ(t *testing.T) {
        	t.Skip("b: skipped")
        }
        """),
}
two = facts(["TestX/one", "TestX"], None, "got 1, want 2", at(fs, "a/x_test.go", "t.Errorf("), 2,
            counts={"passed": 3, "failed": 2, "skipped": 2})
add("go", "two_packages", fs, ["go", "test", "./..."], dict(two, counts=None),  # not printed
    version=GO_V)
add("go", "two_packages_verbose", fs, ["go", "test", "-v", "./..."], two, version=GO_V)
add("go", "two_packages_json", fs, ["go", "test", "-json", "./..."], two, version=GO_V)
fs = {
    "go.mod": GO_MOD,
    "idx.go": D("""
        package glcap

        func Third(xs []int) int {
        	return xs[2]
        }
        """),
    "idx_test.go": D("""
        package glcap

        import "testing"

        func TestThird(t *testing.T) {
        	if Third([]int{1}) != 0 {
        		t.Fatal("unreachable")
        	}
        }
        """),
}
add("go", "test_panic", fs, ["go", "test", "./..."],
    facts(["TestThird"], "panic", "runtime error: index out of range [2] with length 1",
          at(fs, "idx.go", "return xs[2]"), 1, killed=False), version=GO_V)
fs = {
    "go.mod": GO_MOD,
    "main.go": D("""
        package main

        import (
        	"fmt"
        	"os"
        )

        func main() {
        	name := "ada"
        	fmt.Printf("hello %d\\n", name)
        	if len(os.Args) > 5 {
        		return
        	}
        }
        """),
}
add("go", "vet", fs, ["go", "vet", "./..."],
    facts([], None, "fmt.Printf format %d has arg name of wrong type string",
          at(fs, "main.go", "fmt.Printf("), 1), version=GO_V)
fs = {
    "go.mod": GO_MOD,
    "main.go": D("""
        package main

        import (
        	"fmt"
        	"strings"
        )

        func count(s string) int {
        	return strings.Count(s, "a")
        }

        func main() {
        	var total int = "many"
        	fmt.Println(total, count(42))
        }
        """),
}
add("go", "build_error", fs, ["go", "build", "./..."],
    facts([], None, 'cannot use "many" (untyped string constant) as int value in variable declaration',
          at(fs, "main.go", 'var total int = "many"'), 2), version=GO_V)

# --------------------------------------------------------------------------
# C via make (gcc / clang), ctest
# --------------------------------------------------------------------------
MAKEFILE = "CC ?= gcc\nCFLAGS ?= -Wall -Wextra -O0\n\napp: main.c util.c\n\t$(CC) $(CFLAGS) -o app main.c util.c\n"
fs = {
    "Makefile": MAKEFILE,
    "util.c": "int helper(int x) { return x * 2; }\n",
    "main.c": D("""
        #include <stdio.h>

        int helper(int x);

        int main(void) {
            int result = helper(3);
            printf("%d\\n", reslt);
            return 0;
        }
        """),
}
add("make", "gcc_compile_error", fs, ["make"],
    facts([], "error", "‘reslt’ undeclared", at(fs, "main.c", 'printf("%d\\n", reslt);'), 1),
    requires=["make", "gcc"], version=["gcc", "--version"], env={"CC": "gcc"})
add("make", "clang_compile_error", fs, ["make"],
    facts([], "error", "use of undeclared identifier 'reslt'", at(fs, "main.c", 'printf("%d\\n", reslt);'), 1),
    requires=["make", "clang"], version=["clang", "--version"], env={"CC": "clang"})
fs = {
    "Makefile": MAKEFILE,
    "util.c": "int helper(int x) { return x * 2; }\n",
    "main.c": D("""
        #include <stdio.h>

        int helper(int x);

        int main(void) {
            int unused = 7;
            unsigned n = 3;
            int i = -1;
            if (i < n) {
                printf("%d\\n", helper(i));
            }
            return 0;
        }
        """),
}
add("make", "gcc_warnings", fs, ["make"],
    facts(["-Wunused-variable", "-Wsign-compare"], "warning", "unused variable ‘unused’",
          at(fs, "main.c", "int unused = 7;"), None),
    requires=["make", "gcc"], version=["gcc", "--version"], env={"CC": "gcc"})
fs = {
    "Makefile": MAKEFILE,
    "util.c": "int helpr(int x) { return x * 2; }\n",
    "main.c": D("""
        #include <stdio.h>

        int helper(int x);

        int main(void) {
            printf("%d\\n", helper(3));
            return 0;
        }
        """),
}
add("make", "gcc_link_error", fs, ["make"],
    facts([], "error", "undefined reference to `helper'", None, 1),
    requires=["make", "gcc"], version=["gcc", "--version"], env={"CC": "gcc"})

fs = {
    "CMakeLists.txt": D("""
        cmake_minimum_required(VERSION 3.16)
        project(glcap C)
        enable_testing()
        add_executable(test_math test_math.c)
        add_executable(test_strings test_strings.c)
        add_executable(test_ok test_ok.c)
        add_test(NAME math COMMAND test_math)
        add_test(NAME strings COMMAND test_strings)
        add_test(NAME ok COMMAND test_ok)
        """),
    "test_math.c": D("""
        #include <stdio.h>

        static int square(int x) { return x + x; }

        int main(void) {
            if (square(3) != 9) {
                fprintf(stderr, "test_math.c:%d: square(3) == %d, expected 9\\n", __LINE__, square(3));
                return 1;
            }
            return 0;
        }
        """),
    "test_strings.c": D("""
        #include <assert.h>
        #include <string.h>

        int main(void) {
            const char *s = "hello";
            assert(strlen(s) == 4);
            return 0;
        }
        """),
    "test_ok.c": "int main(void) { return 0; }\n",
}
add("ctest", "failures", fs, ["ctest", "--test-dir", "build", "--output-on-failure"],
    facts(["math", "strings"], "Failed", "square(3) == 6, expected 9",
          at(fs, "test_math.c", "fprintf(stderr"), 2, killed=True),
    setup=[["cmake", "-S", ".", "-B", "build"], ["cmake", "--build", "build"]],
    requires=["ctest", "cmake", "cc"])

# --------------------------------------------------------------------------
# ruby: rspec, minitest
# --------------------------------------------------------------------------
fs = {
    "lib/calc.rb": D("""
        class Calc
          def add(a, b)
            a + b + 1
          end

          def avg(xs)
            xs.sum / xs.size
          end

          def config
            nil
          end
        end
        """),
    "spec/calc_spec.rb": D("""
        require_relative "../lib/calc"

        RSpec.describe Calc do
          it "adds two numbers" do
            expect(Calc.new.add(2, 2)).to eq(4)
          end

          it "reads the port" do
            expect(Calc.new.config.fetch(:port)).to eq(80)
          end

          it "averages" do
            expect(Calc.new.avg([2, 4])).to eq(3)
          end
        end
        """),
}
add("rspec", "failures", fs, ["rspec"],
    facts(["./spec/calc_spec.rb:4", "./spec/calc_spec.rb:8"], "RSpec::Expectations::ExpectationNotMetError",
          "got: 5", at(fs, "spec/calc_spec.rb", "expect(Calc.new.add(2, 2)).to eq(4)"), 2))
fs = {
    "lib/calc.rb": D("""
        class Calc
          def add(a, b)
            a + b + 1
          end

          def div(a, b)
            a / b
          end
        end
        """),
    "test/test_calc.rb": D("""
        require "minitest/autorun"
        require "calc"

        class CalcTest < Minitest::Test
          def test_add
            assert_equal 4, Calc.new.add(2, 2)
          end

          def test_div
            assert_equal 0, Calc.new.div(1, 0)
          end

          def test_ok
            assert true
          end
        end
        """),
}
add("minitest", "failures", fs, ["ruby", "-Ilib", "test/test_calc.rb", "--seed", "42"],
    facts(["CalcTest#test_add", "CalcTest#test_div"], "Minitest::Assertion", "Expected: 4\n  Actual: 5",
          at(fs, "test/test_calc.rb", "assert_equal 4, Calc.new.add(2, 2)"), 2),
    version=["ruby", "-rminitest", "-e", "puts \"ruby #{RUBY_VERSION} minitest #{Minitest::VERSION}\""])

# --------------------------------------------------------------------------
# phpunit
# --------------------------------------------------------------------------
fs = {
    "src/Calc.php": D("""
        <?php

        class Calc
        {
            public function add(int $a, int $b): int
            {
                return $a + $b + 1;
            }

            public function div(int $a, int $b): int
            {
                return intdiv($a, $b);
            }
        }
        """),
    "tests/CalcTest.php": D("""
        <?php

        use PHPUnit\\Framework\\TestCase;

        require_once __DIR__ . '/../src/Calc.php';

        final class CalcTest extends TestCase
        {
            public function testAdd(): void
            {
                $this->assertSame(4, (new Calc())->add(2, 2));
            }

            public function testDiv(): void
            {
                $this->assertSame(0, (new Calc())->div(1, 0));
            }

            public function testOk(): void
            {
                $this->assertTrue(true);
            }
        }
        """),
}
add("phpunit", "failure_and_error", fs, ["phpunit", "tests"],
    facts(["CalcTest::testAdd", "CalcTest::testDiv"], "ExpectationFailedException",
          "Failed asserting that 5 is identical to 4.", at(fs, "tests/CalcTest.php", "assertSame(4"), 2))

# --------------------------------------------------------------------------
# javac (no build tool: Maven Central is unreachable)
# --------------------------------------------------------------------------
fs = {
    "src/Main.java": D("""
        import java.util.List;

        public class Main {
            static int total(List<Integer> xs) {
                int sum = 0;
                for (int x : xs) sum += x;
                return sum;
            }

            public static void main(String[] args) {
                String count = total(List.of(1, 2));
                System.out.println(count.length() + undefinedVar);
            }
        }
        """),
}
add("javac", "compile_error", fs, ["javac", "-d", "out", "src/Main.java"],
    facts([], "error", "incompatible types: int cannot be converted to String",
          at(fs, "src/Main.java", "String count = total"), 2), version=["javac", "-version"])

# --------------------------------------------------------------------------
# shell / environment failures
# --------------------------------------------------------------------------
fs = {"README": "empty project\n"}
add("shell", "command_not_found_sh", fs, ["sh", "-c", "nonexistent-tool --check"],
    facts([], "not found", "nonexistent-tool: not found", None, None),
    version="dpkg-query -W -f='dash ${Version}' dash")
add("shell", "command_not_found_bash", fs, ["bash", "-c", "nonexistent-tool --check"],
    facts([], "command not found", "nonexistent-tool: command not found", None, None))
fs = {"package.json": '{\n  "name": "noscripts",\n  "private": true,\n  "scripts": {}\n}\n'}
add("shell", "npm_missing_script", fs, ["npm", "test"],
    facts([], "Missing script", 'Missing script: "test"', None, None))


# --------------------------------------------------------------------------
# runner
# --------------------------------------------------------------------------
def base_env(case: Case) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in DROPPED_ENV}
    env.update(FORCED_ENV)
    front = list(case.path_front)
    if not case.path_front:
        front += [str(VENV_BIN), str(NODE_BIN)]
    env["PATH"] = os.pathsep.join(front + [env.get("PATH", "")])
    env.update(case.env)
    return env


def run_capture(argv: list[str] | str, cwd: Path, env: dict[str, str], timeout: float
                ) -> tuple[int, str, str, bool]:
    shell = isinstance(argv, str)
    proc = subprocess.Popen(argv, cwd=cwd, env=env, shell=shell, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            executable=None if not shell else "/bin/sh")
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
    return (proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), timed_out)


def which(name: str, env: dict[str, str]) -> str | None:
    return shutil.which(name, path=env["PATH"])


def tool_version(case: Case, env: dict[str, str], cwd: Path) -> str:
    try:
        rc, out, err, _ = run_capture(case.version_argv, cwd, env, 120)
    except OSError as exc:
        return f"unknown ({exc})"
    text = (out.strip() or err.strip()).splitlines()
    return text[0].strip() if text else "unknown"


def ensure_bare_venv() -> None:
    if not (BARE_VENV / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(BARE_VENV)], check=True)


def write_project(case: Case) -> None:
    cwd = case.cwd
    if cwd.exists():
        shutil.rmtree(cwd)
    cwd.mkdir(parents=True)
    shared = PROJECTS_DIR / case.tool / case.name
    if shared.is_dir():
        shutil.copytree(shared, cwd, dirs_exist_ok=True)
    for rel, text in case.files.items():
        p = cwd / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    if case.link_node_modules:
        (cwd / "node_modules").symlink_to(NODE_MODULES)


def check_facts(case: Case, text: str) -> list[str]:
    plain = ANSI_RE.sub("", text)
    f = case.facts
    missing = []
    for fid in f["failing_ids"]:
        if fid not in plain:
            missing.append(f"failing_ids:{fid}")
    for key in ("error_type", "message"):
        if f[key] and f[key] not in plain:
            missing.append(f"{key}:{f[key]}")
    if f["frame"]:
        path, line = f["frame"].rsplit(":", 1)
        base = path.rsplit("/", 1)[-1]
        pats = [f"{path}:{line}", f'{path}", line {line}', f"{path}({line},",
                f"{base}:{line}", f'{base}", line {line}']
        found = any(p in plain for p in pats)
        if not found and path in plain:
            # eslint "stylish" (file header, then "  LINE:COL  ...") or JSON reports
            found = bool(re.search(rf"^\s+{line}:\d+\s", plain, re.M)
                         or re.search(rf'"(row|line)":\s*{line}\b', plain))
        if not found:
            missing.append(f"frame:{f['frame']}")
    return missing


def capture(case: Case, date: str) -> tuple[str, str]:
    """Returns (status, detail)."""
    env = base_env(case)
    need = [r for r in case.requires if not which(r, env)]
    if need:
        return "skipped", f"missing tool(s): {', '.join(need)}"
    write_project(case)
    for step in case.setup:
        rc, out, err, _ = run_capture(step, case.cwd, env, case.timeout)
        if rc != 0:
            return "skipped", f"setup step {step} failed rc={rc}: {(out + err)[-500:]}"
    rc, out, err, timed_out = run_capture(case.argv, case.cwd, env, case.timeout)
    version = tool_version(case, env, case.cwd)
    unverified = check_facts(case, out + "\n" + err)
    record = {
        "tool": case.tool,
        "case": case.name,
        "argv": case.argv,
        "cwd_placeholder": str(case.cwd),
        "exit_code": rc,
        "stdout": out,
        "stderr": err,
        "tool_version": version,
        "captured_at": date,
        "facts": case.facts,
        "facts_unverified": unverified,
        "setup": case.setup,
        "timed_out": timed_out,
        "timeout_s": case.timeout if timed_out else None,
        "env": {k: v for k, v in FORCED_ENV.items()} | case.env,
    }
    d = OUT_DIR / case.tool
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{case.name}.json").write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    sep = "" if (not out or out.endswith("\n")) else "\n"
    (d / f"{case.name}.txt").write_text(out + sep + err, encoding="utf-8")
    size = (d / f"{case.name}.json").stat().st_size
    detail = f"exit={rc} version={version!r} size={size // 1024}KB"
    if size > 200 * 1024:
        detail += " WARNING: >200KB"
    if unverified:
        detail += f" unverified={unverified}"
    return "captured", detail


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", action="append", default=[], help="only this tool (repeatable, or comma-separated)")
    ap.add_argument("--case", action="append", default=[], help="only this case name (repeatable)")
    ap.add_argument("--list", action="store_true", help="list cases and exit")
    args = ap.parse_args()
    only = {t for o in args.only for t in o.split(",") if t}
    cases = [c for c in CASES if (not only or c.tool in only) and (not args.case or c.name in args.case)]
    if args.list:
        for c in cases:
            argv = c.argv if isinstance(c.argv, str) else " ".join(c.argv)
            print(f"{c.tool}/{c.name}: {argv}")
        print(f"{len(cases)} cases, {len({c.tool for c in cases})} tools")
        return 0
    if any(c.path_front == [str(BARE_VENV / "bin")] for c in cases):
        ensure_bare_venv()
    CAP_ROOT.mkdir(parents=True, exist_ok=True)
    date = _dt.date.today().isoformat()
    results: list[tuple[Case, str, str]] = []
    for c in cases:
        try:
            status, detail = capture(c, date)
        except Exception as exc:  # never fail the whole run for one case
            status, detail = "skipped", f"error: {type(exc).__name__}: {exc}"
        results.append((c, status, detail))
        print(f"[{status}] {c.tool}/{c.name}: {detail}", flush=True)
    captured = [r for r in results if r[1] == "captured"]
    skipped = [r for r in results if r[1] != "captured"]
    versions: dict[str, str] = {}
    for c, _, _ in captured:
        j = json.loads((OUT_DIR / c.tool / f"{c.name}.json").read_text(encoding="utf-8"))
        versions.setdefault(c.tool, j["tool_version"])
    print(f"\ncaptured {len(captured)} cases over {len({r[0].tool for r in captured})} tools; skipped {len(skipped)}")
    for c, _, detail in skipped:
        print(f"  skipped {c.tool}/{c.name}: {detail}")
    for tool, v in sorted(versions.items()):
        print(f"  {tool}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

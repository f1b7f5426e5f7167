"""pytest cases: assertion diffs, subtests, deep exceptions, collection and syntax errors."""

from __future__ import annotations

from registry import D, add, at, facts

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

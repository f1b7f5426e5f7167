"""unittest, mypy, ruff / flake8 / black and pyright cases."""

from __future__ import annotations

from registry import D, add, at, facts

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

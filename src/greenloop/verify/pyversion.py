"""Does the Python that ran the tests satisfy the project's ``requires-python``?

A project that needs 3.12 (``type X = …``, PEP 695 generics) fails under 3.11 with a SyntaxError in
its own code: the interpreter's fault, not the code's, and an agent "fixing" it would rewrite
the project for a Python it does not support. Only the clauses of PEP 440 a ``requires-python``
uses in practice are read (``>=``, ``>``, ``<``, ``<=``, ``==`` with ``.*``, ``~=``, ``!=``).
"""

from __future__ import annotations

import re

_REQUIRES = re.compile(r"""^[ \t]*requires-python\s*=\s*["']([^"']+)["']""", re.MULTILINE)
_CLAUSE = re.compile(r"^(~=|==|!=|<=|>=|<|>)\s*(\d+(?:\.\d+)*)(\.\*)?$")

Version = tuple[int, ...]


def requires_python(pyproject_text: str) -> str:
    """``[project] requires-python`` as written, or ""."""
    found = _REQUIRES.search(pyproject_text)
    return found.group(1).strip() if found else ""


def satisfies(python: str, spec: str) -> bool:
    """True unless a clause of ``spec`` this module reads excludes ``python`` (e.g. "3.11.7")."""
    try:
        version = tuple(int(part) for part in python.split(".")[:3])
    except ValueError:
        return True
    clauses = (c.strip() for c in spec.split(","))
    return all(_holds(version, c) for c in clauses if c)


def _holds(version: Version, clause: str) -> bool:
    m = _CLAUSE.match(clause)
    if m is None:
        return True  # a clause this module does not read never decides
    op, number, wildcard = m.group(1), m.group(2), m.group(3)
    bound = tuple(int(part) for part in number.split("."))
    if op in ("==", "!=") and wildcard:
        same = version[: len(bound)] == bound
        return same if op == "==" else not same
    if op == "~=":  # ~=3.12 is >=3.12 and ==3.*
        return _cmp(version, bound) >= 0 and version[: len(bound) - 1] == bound[:-1]
    order = _cmp(version, bound)
    return {
        "==": order == 0,
        "!=": order != 0,
        ">=": order >= 0,
        ">": order > 0,
        "<=": order <= 0,
        "<": order < 0,
    }[op]


def _cmp(version: Version, bound: Version) -> int:
    width = max(len(version), len(bound))
    a = version + (0,) * (width - len(version))
    b = bound + (0,) * (width - len(bound))
    return (a > b) - (a < b)

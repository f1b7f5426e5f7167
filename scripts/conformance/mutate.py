"""Seeded one-line mutations of Python source, located with ``ast`` (stdlib only).

Kinds (each changes exactly one line):
    comparison     flip one comparison operator (``<`` -> ``>=``, ``==`` -> ``!=``, ``in`` -> ``not in``)
    off_by_one     an integer literal n -> n + 1 (a wrong constant, e.g. one passed down to a callee)
    return_value   ``return X`` -> ``return None`` (``True``/``False`` flipped)
    syntax         drop the ``:`` that ends a one-line ``if``/``for``/``while``/``def`` header
    type_return    ``return X`` -> ``return str(X)`` (mypy: incompatible return value)
    type_arg       an integer literal argument n -> ``"n"`` (mypy: incompatible argument type)
    undefined_name a name read -> the same name with its last two letters swapped (ruff F821)
    eq_none        ``x is None`` -> ``x == None`` (ruff E711)
    attribute      ``self.name`` read -> ``self.naem`` (an attribute renamed on one side: AttributeError)
    method         ``obj.name(…)`` called -> ``obj.naem(…)`` on any object (AttributeError where it runs,
                   e.g. a fixture's teardown after its ``yield``)
    bad_import     ``from .mod import Name`` -> ``Naem`` (a failing import of the project's own name)

Sites are sorted by position; the seed picks one (``random.Random(f"{file}:{kind}:{seed}")``), so the
same manifest always gives the same mutant. A ``line`` in the manifest restricts the choice to it.
Other languages' modules (node.py, native.py) provide their own site finders with the same Edit.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Callable, Iterator

import clike
from edit import Edit

FLIP = {
    "==": "!=", "!=": "==", "<": ">=", ">=": "<", ">": "<=", "<=": ">",
    "in": "not in", "not in": "in", "is": "is not", "is not": "is",
}  # fmt: skip


def _span(line: str, start: int, end: int) -> tuple[int, int]:
    """ast byte offsets -> str offsets on that line."""
    data = line.encode("utf-8")
    return len(data[:start].decode("utf-8")), len(data[:end].decode("utf-8"))


def _replace(line: str, start: int, end: int, text: str) -> str:
    a, b = _span(line, start, end)
    return line[:a] + text + line[b:]


def _one_line(node: ast.AST) -> bool:
    return getattr(node, "lineno", 0) == getattr(node, "end_lineno", -1)


def _docstring_nodes(tree: ast.AST) -> set[int]:
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                skip.add(id(body[0].value))
    return skip


def comparison(tree: ast.AST, lines: list[str]) -> Iterator[Edit]:
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Compare) and _one_line(node) and len(node.ops) == 1):
            continue
        line = lines[node.lineno - 1]
        a, b = _span(line, node.left.end_col_offset or 0, node.comparators[0].col_offset)
        gap = line[a:b]
        op = " ".join(gap.replace("(", " ").replace(")", " ").split())
        if op in FLIP:
            new_gap = gap.replace(op, FLIP[op], 1) if op in gap else f" {FLIP[op]} "
            yield Edit(line=node.lineno, before=line, after=line[:a] + new_gap + line[b:])


def _ints(tree: ast.AST) -> Iterator[ast.Constant]:
    docs = _docstring_nodes(tree)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and type(node.value) is int
            and _one_line(node)
            and id(node) not in docs
        ):
            yield node


def off_by_one(tree: ast.AST, lines: list[str]) -> Iterator[Edit]:
    for node in _ints(tree):
        line = lines[node.lineno - 1]
        after = _replace(line, node.col_offset, node.end_col_offset or 0, str(node.value + 1))
        yield Edit(line=node.lineno, before=line, after=after)


def type_arg(tree: ast.AST, lines: list[str]) -> Iterator[Edit]:
    for call in ast.walk(tree):
        if not isinstance(call, ast.Call):
            continue
        for arg in call.args:
            if isinstance(arg, ast.Constant) and type(arg.value) is int and _one_line(arg):
                line = lines[arg.lineno - 1]
                after = _replace(line, arg.col_offset, arg.end_col_offset or 0, f'"{arg.value}"')
                yield Edit(line=arg.lineno, before=line, after=after)


def _returns(tree: ast.AST, lines: list[str]) -> Iterator[tuple[ast.Return, ast.expr, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Return) and node.value is not None and _one_line(node):
            yield node, node.value, lines[node.lineno - 1]


def return_value(tree: ast.AST, lines: list[str]) -> Iterator[Edit]:
    for node, value, line in _returns(tree, lines):
        if isinstance(value, ast.Constant) and value.value is None:
            continue
        new = "None"
        if isinstance(value, ast.Constant) and isinstance(value.value, bool):
            new = str(not value.value)
        after = _replace(line, value.col_offset, value.end_col_offset or 0, new)
        yield Edit(line=node.lineno, before=line, after=after)


def type_return(tree: ast.AST, lines: list[str]) -> Iterator[Edit]:
    for node, value, line in _returns(tree, lines):
        a, b = _span(line, value.col_offset, value.end_col_offset or 0)
        yield Edit(line=node.lineno, before=line, after=f"{line[:a]}str({line[a:b]}){line[b:]}")


def syntax(tree: ast.AST, lines: list[str]) -> Iterator[Edit]:
    headers = ast.If | ast.For | ast.While | ast.FunctionDef
    for node in ast.walk(tree):
        if isinstance(node, headers):
            line = lines[node.lineno - 1]
            code = line.rstrip()
            if code.endswith(":") and "#" not in code and code.count(":") == 1:
                yield Edit(line=node.lineno, before=line, after=code[:-1])


def undefined_name(tree: ast.AST, lines: list[str]) -> Iterator[Edit]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and len(node.id) > 3:
            line = lines[node.lineno - 1]
            typo = node.id[:-2] + node.id[-1] + node.id[-2]
            if typo != node.id:
                after = _replace(line, node.col_offset, node.end_col_offset or 0, typo)
                yield Edit(line=node.lineno, before=line, after=after)


def _swap_tail(name: str) -> str:
    return name[:-2] + name[-1] + name[-2]


def attribute(tree: ast.AST, lines: list[str]) -> Iterator[Edit]:
    """``self.name`` read -> ``self.naem``: an attribute renamed on one side only (AttributeError)."""
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Load)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
            and len(node.attr) > 3
            and _one_line(node)
        ):
            continue
        line = lines[node.lineno - 1]
        a, b = _span(line, node.col_offset, node.end_col_offset or 0)
        typo = _swap_tail(node.attr)
        if typo != node.attr and line[a:b].endswith("." + node.attr):
            yield Edit(
                line=node.lineno, before=line, after=line[: b - len(node.attr)] + typo + line[b:]
            )


def method(tree: ast.AST, lines: list[str]) -> Iterator[Edit]:
    """``obj.name(…)`` -> ``obj.naem(…)``: a method misspelt on any object, not only ``self``."""
    for node in ast.walk(tree):
        func = node.func if isinstance(node, ast.Call) else None
        if not (isinstance(func, ast.Attribute) and len(func.attr) > 3 and _one_line(func)):
            continue
        line = lines[func.lineno - 1]
        a, b = _span(line, func.col_offset, func.end_col_offset or 0)
        typo = _swap_tail(func.attr)
        if typo != func.attr and line[a:b].endswith("." + func.attr):
            yield Edit(
                line=func.lineno, before=line, after=line[: b - len(func.attr)] + typo + line[b:]
            )


def bad_import(tree: ast.AST, lines: list[str]) -> Iterator[Edit]:
    """``from .mod import Name`` -> ``Naem``: a failing import of the project's own name (ImportError)."""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.ImportFrom) and node.level and _one_line(node)):
            continue
        name = node.names[0].name
        line = lines[node.lineno - 1]
        typo = _swap_tail(name)
        if len(name) > 3 and typo != name and line.count(name) == 1:
            yield Edit(line=node.lineno, before=line, after=line.replace(name, typo, 1))


def eq_none(tree: ast.AST, lines: list[str]) -> Iterator[Edit]:
    for edit in comparison(tree, lines):
        if " is None" in edit.before or " is not None" in edit.before:
            fixed = edit.before.replace(" is not None", " != None", 1)
            yield Edit(
                line=edit.line, before=edit.before, after=fixed.replace(" is None", " == None", 1)
            )


KINDS: dict[str, Callable[[ast.AST, list[str]], Iterator[Edit]]] = {
    "comparison": comparison,
    "off_by_one": off_by_one,
    "return_value": return_value,
    "syntax": syntax,
    "type_return": type_return,
    "type_arg": type_arg,
    "undefined_name": undefined_name,
    "eq_none": eq_none,
    "attribute": attribute,
    "method": method,
    "bad_import": bad_import,
}


def sites(source: str, kind: str) -> list[Edit]:
    """Every candidate one-line edit of this kind, sorted by line (at most one per line)."""
    lines = source.splitlines()
    seen: dict[int, Edit] = {}
    for edit in KINDS[kind](ast.parse(source), lines):
        if edit.after != edit.before:
            seen.setdefault(edit.line, edit)
    return [seen[n] for n in sorted(seen)]


def choose(source: str, kind: str, *, name: str, seed: int, line: int | None = None) -> Edit:
    """The seed's pick among the sites (on ``line`` when given); JS/TS, Go, Rust: clike.py."""
    every = clike.sites(source, kind, name=name) if clike.handles(name) else sites(source, kind)
    found = [e for e in every if line is None or e.line == line]
    if not found:
        where = f" on line {line}" if line else ""
        raise ValueError(f"no {kind} site in {name}{where}")
    return random.Random(f"{name}:{kind}:{seed}").choice(found)

"""Single-site mutations of Python source through ``ast``: each edits one span of one line."""

from __future__ import annotations

import ast
import hashlib
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

SWAPS = {
    "<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "==",
    "+": "-", "-": "+", "*": "//", "and": "or", "or": "and",
}  # fmt: skip
COMPARE_OPS = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
}
ARITH_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Mutant:
    """One candidate: replace ``old`` by ``new`` at (line, col) of ``path``."""

    path: str
    line: int
    col: int
    kind: str
    old: str
    new: str

    @property
    def id(self) -> str:
        key = f"{self.path}:{self.line}:{self.col}:{self.kind}:{self.new}"
        return f"m-{hashlib.sha256(key.encode()).hexdigest()[:10]}"

    def apply(self, text: str) -> str:
        lines = text.splitlines(keepends=True)
        row = lines[self.line - 1]
        start = _char_col(row, self.col)
        assert row[start : start + len(self.old)] == self.old, (self, row)
        lines[self.line - 1] = row[:start] + self.new + row[start + len(self.old) :]
        return "".join(lines)


def mutants_of(path: str, text: str) -> list[Mutant]:
    """Every candidate mutation of one file, in source order."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    lines = text.splitlines(keepends=True)
    found = {m for node in ast.walk(tree) for m in _of_node(path, node, lines)}
    valid = [m for m in found if _applies(m, text)]
    return sorted(valid, key=lambda m: (m.line, m.col, m.kind, m.new))


def holds_old(m: Mutant, text: str) -> bool:
    """The span ``apply`` would replace holds ``old`` (its rows are ``splitlines``')."""
    rows = text.splitlines(keepends=True)
    if m.line > len(rows):
        return False
    row = rows[m.line - 1]
    start = _char_col(row, m.col)
    return row[start : start + len(m.old)] == m.old


def _applies(m: Mutant, text: str) -> bool:
    """The span holds what the node said (f-string internals may not) and the result parses."""
    if not holds_old(m, text):
        return False
    try:
        ast.parse(m.apply(text))
    except (SyntaxError, ValueError):
        return False
    return True


def draw(candidates: Sequence[Mutant], n: int, seed: int) -> Iterator[Mutant]:
    """Candidates in a seeded order that spreads over files and kinds (round robin)."""
    rng = random.Random(seed)
    groups: dict[tuple[str, str], list[Mutant]] = {}
    for m in candidates:
        groups.setdefault((m.path, m.kind), []).append(m)
    for group in groups.values():
        rng.shuffle(group)
    keys = sorted(groups)
    rng.shuffle(keys)
    while keys:
        for key in list(keys):
            group = groups[key]
            yield group.pop()
            if not group:
                keys.remove(key)


def _of_node(path: str, node: ast.AST, lines: list[str]) -> Iterator[Mutant]:
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        op = COMPARE_OPS.get(type(node.ops[0]))
        if op:
            yield from _between(path, node.left, node.comparators[0], op, "compare", lines)
    elif isinstance(node, ast.BinOp):
        op = ARITH_OPS.get(type(node.op))
        if op:
            yield from _between(path, node.left, node.right, op, "arith", lines)
    elif isinstance(node, ast.BoolOp) and len(node.values) == 2:
        op = "and" if isinstance(node.op, ast.And) else "or"
        yield from _between(path, node.values[0], node.values[1], op, "bool", lines)
    elif isinstance(node, ast.Constant):
        yield from _constant(path, node)
    elif isinstance(node, ast.Return) and node.value is not None:
        yield from _span(path, node.value, "None", "return_none", lines)
    elif isinstance(node, ast.If | ast.While):
        yield from _negate(path, node.test, lines)


def _between(
    path: str, left: ast.expr, right: ast.expr, op: str, kind: str, lines: list[str]
) -> Iterator[Mutant]:
    """The operator token sits between the end of ``left`` and the start of ``right``."""
    if left.end_lineno != right.lineno or left.end_col_offset is None:
        return
    row = lines[left.end_lineno - 1].encode()
    gap = row[left.end_col_offset : right.col_offset].decode(errors="replace")
    at = gap.find(op)
    if at < 0 or gap.strip("() \t") != op:
        return
    col = left.end_col_offset + len(gap[:at].encode())
    yield Mutant(path=path, line=left.end_lineno, col=col, kind=kind, old=op, new=SWAPS[op])


def _constant(path: str, node: ast.Constant) -> Iterator[Mutant]:
    if node.lineno != node.end_lineno:
        return
    value = node.value
    line, col = node.lineno, node.col_offset
    if isinstance(value, bool):
        old, new = ("True", "False") if value else ("False", "True")
        yield Mutant(path=path, line=line, col=col, kind="bool_constant", old=old, new=new)
    elif isinstance(value, int) and 0 <= value < 10**6:
        for other in (value + 1, value - 1):
            if other >= 0:
                yield Mutant(
                    path=path,
                    line=line,
                    col=col,
                    kind="int_constant",
                    old=str(value),
                    new=str(other),
                )


def _span(path: str, node: ast.expr, new: str, kind: str, lines: list[str]) -> Iterator[Mutant]:
    if node.lineno != node.end_lineno or node.end_col_offset is None:
        return
    row = lines[node.lineno - 1].encode()
    old = row[node.col_offset : node.end_col_offset].decode()
    if old != new:
        yield Mutant(path=path, line=node.lineno, col=node.col_offset, kind=kind, old=old, new=new)


def _negate(path: str, test: ast.expr, lines: list[str]) -> Iterator[Mutant]:
    if test.lineno != test.end_lineno or test.end_col_offset is None:
        return
    row = lines[test.lineno - 1].encode()
    old = row[test.col_offset : test.end_col_offset].decode()
    yield Mutant(
        path=path, line=test.lineno, col=test.col_offset, kind="negate", old=old, new=f"not ({old})"
    )


def _char_col(row: str, byte_col: int) -> int:
    """ast columns count UTF-8 bytes; strings count characters."""
    return len(row.encode()[:byte_col].decode(errors="replace"))

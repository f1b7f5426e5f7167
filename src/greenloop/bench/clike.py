"""Single-site mutations of C-like sources (JS/TS, Go, Rust), token level, never inside strings,
template literals, regex or char literals, raw strings or comments (``tokens.code_tokens``).

A binary operator is mutated only where formatted code spells a binary operator: spaces on both
sides and an operand before it, so ``Vec<u8>``, ``<-ch``, ``x++``, ``move ||`` and ``-1`` are
left alone; the kinds are those of the Python mutator, so ``draw`` spreads over both alike.
"""

from __future__ import annotations

from greenloop.bench.mutate import Mutant, holds_old
from greenloop.bench.tokens import Token, code_tokens, is_directive, library_lines

SWAPS = {
    "<": ("compare", "<="), "<=": ("compare", "<"), ">": ("compare", ">="),
    ">=": ("compare", ">"), "==": ("compare", "!="), "!=": ("compare", "=="),
    "===": ("compare", "!=="), "!==": ("compare", "==="), "+": ("arith", "-"),
    "-": ("arith", "+"), "&&": ("bool", "||"), "||": ("bool", "&&"),
}  # fmt: skip
BOOLS = {"true": "false", "false": "true"}
NOT_OPERANDS = frozenset(
    [
        "return",
        "move",
        "in",
        "of",
        "case",
        "typeof",
        "instanceof",
        "else",
        "yield",
        "await",
        "let",
        "const",
        "var",
        "mut",
        "new",
        "void",
        "delete",
        "throw",
        "go",
        "defer",
        "range",
    ]
)
OPERAND_ENDS = "_$)]\"'`"
MAX_INT = 10**6


def mutants_of(path: str, text: str, *, lang: str) -> list[Mutant]:
    """Every candidate mutation of one file, in source order."""
    lines = library_lines(text, lang=lang)
    tokens = code_tokens("\n".join(lines), lang=lang)
    found: list[Mutant] = []
    for index, token in enumerate(tokens):
        row = lines[token.line - 1]
        if is_directive(row):
            continue
        for kind, new in _edits(tokens, index, row, lang=lang):
            col = len(row[: token.start].encode())  # Mutant columns count UTF-8 bytes, as ast's
            found.append(
                Mutant(path=path, line=token.line, col=col, kind=kind, old=token.text, new=new)
            )
    return [m for m in found if holds_old(m, text)]  # splitlines may see other line ends


def _edits(tokens: list[Token], index: int, row: str, *, lang: str) -> list[tuple[str, str]]:
    token = tokens[index]
    if token.kind == "num":
        value = int(token.text)
        if value >= MAX_INT or (token.text.startswith("0") and len(token.text) > 1):  # octal-ish
            return []
        return [("int_constant", str(n)) for n in (value + 1, value - 1) if n >= 0]
    if token.kind == "word":
        return [("bool_constant", BOOLS[token.text])] if token.text in BOOLS else []
    swap = SWAPS.get(token.text)
    if swap is None or not _binary(tokens, index, row, lang=lang):
        return []
    return [swap]


def _binary(tokens: list[Token], index: int, row: str, *, lang: str) -> bool:
    """Spaced on both sides, after an operand, before more code on the same line."""
    token = tokens[index]
    spaced = row[token.start - 1 : token.start] == " " and row[token.end : token.end + 1] == " "
    if not spaced or not row[token.end :].strip() or not _operand_before(tokens, index, row):
        return False
    before = tokens[index - 1]
    after = tokens[index + 1] if index + 1 < len(tokens) else before
    return not (lang == "rust" and _trait_bound(before, after, token))


def _operand_before(tokens: list[Token], index: int, row: str) -> bool:
    """A name, a number, a closing bracket or a literal (blanked in ``tokens``, so read the row)."""
    text = row[: tokens[index].start].rstrip()
    if not text or not (text[-1].isalnum() or text[-1] in OPERAND_ENDS):
        return False
    before = tokens[index - 1] if index else None
    keyword = before is not None and before.kind == "word" and before.text in NOT_OPERANDS
    return not (keyword and before is not None and before.end == len(text))


def _trait_bound(before: Token, after: Token, token: Token) -> bool:
    """``T: Clone + Send``: a ``+`` between type names is a bound, not an addition."""
    return token.text == "+" and before.text[:1].isupper() and after.text[:1].isupper()

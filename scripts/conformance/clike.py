"""Seeded one-line mutations for C-like sources (JS/TS, Go, Rust), token level.

The tokenizer (greenloop.bench.tokens) only has to know where code is: strings, template literals, regex
literals, char literals and comments are skipped whole, so a mutation never lands
inside them. Every mutation replaces one token (or drops one) on one line, and the
site is picked by ``random.Random(seed)`` over the candidates in file order, so a
seed names the same mutant on every machine.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path

from edit import Edit

# the tokenizer lives in the product (greenloop bench seeds bugs with it too)
from greenloop.bench.tokens import LANGS, Token, code_tokens, is_directive, library_lines

KINDS = (
    "flip_comparison", "off_by_one", "wrong_return", "syntax_error", "undefined_name", "bad_import",
)  # fmt: skip

_FLIP = {"===": "!==", "!==": "===", "==": "!=", "!=": "==", "<=": ">", ">=": "<"}
_FLIP_ANGLE = {"<": ">=", ">": "<="}  # JS only: in TS, Go and Rust '<'/'>' may be generics
_BOOL = {"true": "false", "false": "true"}
_KEYWORDS = frozenset(
    "if else for while do return function const let var new this true false null undefined "
    "typeof instanceof in of class extends super import export from default switch case break "
    "continue throw try catch finally async await yield void delete static get set "
    "func package type struct interface map chan go defer select range nil fn let mut impl pub "
    "use mod crate self Self match loop where trait enum as ref move unsafe extern dyn "
    "string number boolean any unknown never object int uint byte rune bool error usize isize "
    "u8 u16 u32 u64 i8 i16 i32 i64 f32 f64 char str String Vec Option Some None Ok Err".split()
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Mutation:
    file: str
    line: int
    kind: str
    before: str
    after: str


def candidates(source: str, *, lang: str, kind: str) -> list[tuple[Token, str]]:
    """Every (token, replacement) of ``kind`` in ``source``, in file order."""
    lines = library_lines(source, lang=lang)  # mutate the library, not its unit tests
    tokens = code_tokens("\n".join(lines), lang=lang)
    found: list[tuple[Token, str]] = []
    for index, token in enumerate(tokens):
        replacement = _replacement(tokens, index, lang=lang, kind=kind)
        if replacement is not None and not is_directive(lines[token.line - 1]):
            found.append((token, replacement))
    if kind == "wrong_return":  # a returned literal when there is one, else any boolean
        returned = [(t, r) for t, r in found if _in_return(tokens, tokens.index(t))]
        return returned or found or _negated_returns(tokens, lang=lang)
    return found


def _negated_returns(tokens: list[Token], *, lang: str) -> list[tuple[Token, str]]:
    """JS without a boolean literal: ``return x`` -> ``return !x`` (a wrong value, still valid)."""
    if lang != "js":
        return []
    return [
        (t, "return !")
        for t, after in zip(tokens, tokens[1:], strict=False)
        if t.text == "return" and after.line == t.line and after.text not in (";", "}")
    ]


def _replacement(tokens: list[Token], index: int, *, lang: str, kind: str) -> str | None:
    token = tokens[index]
    if kind == "flip_comparison":
        table = {**_FLIP, **_FLIP_ANGLE} if lang == "js" else _FLIP
        return table.get(token.text) if token.kind == "op" else None
    if kind == "off_by_one":
        return str(int(token.text) + 1) if token.kind == "num" and len(token.text) < 6 else None
    if kind == "wrong_return":
        return _BOOL.get(token.text) if token.kind == "word" else None
    if kind == "syntax_error":
        return "" if token.text == ")" else None
    if kind == "undefined_name":
        return _misspelt(tokens, index)
    raise ValueError(f"unknown mutation kind {kind!r}")


def _in_return(tokens: list[Token], index: int) -> bool:
    same_line = [t.text for t in tokens if t.line == tokens[index].line]
    return "return" in same_line or "=>" in same_line


def _misspelt(tokens: list[Token], index: int) -> str | None:
    """A use of a project identifier (called, not declared, not a property) misspelt."""
    token = tokens[index]
    if token.kind != "word" or token.text in _KEYWORDS or len(token.text) < 3:
        return None
    before = tokens[index - 1].text if index else ""
    after = tokens[index + 1].text if index + 1 < len(tokens) else ""
    if before in (".", "function", "func", "fn", "const", "let", "var", "class", "type", "mut"):
        return None
    return token.text + "Typo" if after == "(" else None


def mutate(root: Path, files: list[str], *, lang: str, kind: str, seed: int) -> list[Mutation]:
    """Candidate mutations of ``kind`` over ``files``, in the order the seed picks them."""
    found: list[Mutation] = []
    for name in files:
        source = (root / name).read_text(encoding="utf-8")
        lines = source.split("\n")
        for token, replacement in candidates(source, lang=lang, kind=kind):
            line = lines[token.line - 1]
            after = line[: token.start] + replacement + line[token.end :]
            found.append(Mutation(file=name, line=token.line, kind=kind, before=line, after=after))
    random.Random(f"{seed}:{kind}").shuffle(found)
    return found


def apply(root: Path, mutation: Mutation) -> None:
    """Write ``mutation`` into its file (one line changed, nothing else)."""
    path = root / mutation.file
    lines = path.read_text(encoding="utf-8").split("\n")
    if lines[mutation.line - 1] != mutation.before:
        raise ValueError(f"{mutation.file}:{mutation.line} is not the line the mutation expects")
    lines[mutation.line - 1] = mutation.after
    path.write_text("\n".join(lines), encoding="utf-8")


# ---- the interface mutate.choose uses (same kind names as the Python mutator) ----

EXTENSIONS = LANGS
KIND_NAMES = {
    "comparison": "flip_comparison",
    "off_by_one": "off_by_one",
    "return_value": "wrong_return",
    "syntax": "syntax_error",
    "undefined_name": "undefined_name",
    "bad_import": "bad_import",
}

# a module specifier: require('x'), import ... from 'x', import('x'), export ... from 'x'
_SPECIFIER = re.compile(r"""(?:\brequire\(|\bfrom\s+|\bimport\s*\(?)\s*(['"])([^'"]+)\1""")


def _misspelt_path(spec: str) -> str | None:
    """A renamed file or package: the last segment's stem with its last two letters swapped
    (``./index.js`` -> ``./indxe.js``, ``reusify`` -> ``reusiyf``); ``..`` -> ``../indx``."""
    if spec.startswith("node:"):
        return None
    if spec.rstrip("/").endswith((".", "..")):
        return spec.rstrip("/") + "/indx"
    head, _, last = spec.rpartition("/")
    stem, dot, ext = last.partition(".")
    if len(stem) < 3:
        return None
    swapped = stem[:-2] + stem[-1] + stem[-2]
    return f"{head}/{swapped}{dot}{ext}" if head else f"{swapped}{dot}{ext}"


def _import_sites(source: str, lang: str) -> list[tuple[int, str, str]]:
    """``(line, before, after)``: a module specifier misspelt, on lines whose code imports."""
    code = {
        t.line for t in code_tokens(source, lang=lang) if t.text in ("require", "from", "import")
    }
    found = []
    for number, line in enumerate(source.split("\n"), 1):
        match = _SPECIFIER.search(line) if number in code else None
        renamed = _misspelt_path(match[2]) if match else None
        if match and renamed:
            after = line[: match.start(2)] + renamed + line[match.end(2) :]
            found.append((number, line, after))
    return found


def handles(name: str) -> bool:
    return Path(name).suffix in EXTENSIONS


def sites(source: str, kind: str, *, name: str) -> list[Edit]:
    """An ``Edit`` per line with a candidate of ``kind``: the first one on the line."""
    lang = EXTENSIONS[Path(name).suffix]
    if kind == "bad_import":  # a load-time failure: the module is not found
        return [Edit(line=n, before=b, after=a) for n, b, a in _import_sites(source, lang)]
    lines = source.split("\n")
    seen: dict[int, Edit] = {}
    for token, replacement in candidates(source, lang=lang, kind=KIND_NAMES.get(kind, kind)):
        line = lines[token.line - 1]
        after = line[: token.start] + replacement + line[token.end :]
        seen.setdefault(token.line, Edit(line=token.line, before=line, after=after))
    return [seen[n] for n in sorted(seen)]

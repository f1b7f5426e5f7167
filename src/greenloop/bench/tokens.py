"""Where code is in C-like sources (JS/TS, Go, Rust): strings, template literals, regex
literals, char literals, raw strings and comments are blanked whole, so what is left to tokenize
is code. Shared by ``greenloop bench``'s mutator and the conformance corpus's scripts."""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = re.compile(
    r"(?P<num>(?<![.\w])\d+\b(?![.\w]))|(?P<word>[A-Za-z_$][\w$]*)|(?P<op>===|!==|==|!=|<=|>=|=>|->|<<|>>|&&|\|\||[<>()\[\]{};,.=+\-*/%!?:&|^~])"
)
_REGEX_BEFORE = set("(,=:[!&|?{};+-*%<>~^") | {"return", "typeof", "case", ""}


@dataclass(frozen=True, slots=True, kw_only=True)
class Token:
    line: int  # 1-based
    start: int  # offset in the line
    end: int
    kind: str  # "num", "word" or "op"
    text: str


def code_tokens(source: str, *, lang: str) -> list[Token]:
    """The tokens of ``source`` outside strings, comments, regex and char literals."""
    tokens: list[Token] = []
    for number, text in enumerate(_code_only(source, lang=lang).split("\n"), start=1):
        for match in _TOKEN.finditer(text):
            kind = match.lastgroup or "op"
            tokens.append(
                Token(line=number, start=match.start(), end=match.end(), kind=kind, text=match[0])
            )
    return tokens


def _code_only(source: str, *, lang: str) -> str:
    """``source`` with every non-code character replaced by a space (newlines kept)."""
    out = list(source)
    i, n, last = 0, len(source), ""
    while i < n:
        end = _skip_end(source, i, lang=lang, last=last)
        if end > i:
            for k in range(i, end):
                if out[k] != "\n":
                    out[k] = " "
            last = "x"  # a literal is an operand
            i = end
            continue
        ch = source[i]
        if not ch.isspace():
            last = _last_word(source, i) if (ch.isalnum() or ch in "_$") else ch
        i += 1
    return "".join(out)


def _last_word(source: str, i: int) -> str:
    j = i
    while j + 1 < len(source) and (source[j + 1].isalnum() or source[j + 1] in "_$"):
        j += 1
    start = i
    while start > 0 and (source[start - 1].isalnum() or source[start - 1] in "_$"):
        start -= 1
    return source[start : j + 1] if source[start : j + 1] in _REGEX_BEFORE else "x"


def _skip_end(source: str, i: int, *, lang: str, last: str) -> int:
    """End offset of the string/comment/literal starting at ``i``, or ``i`` if none."""
    two = source[i : i + 2]
    if two == "//":
        end = source.find("\n", i)
        return len(source) if end < 0 else end
    if two == "/*":
        end = source.find("*/", i + 2)
        return len(source) if end < 0 else end + 2
    ch = source[i]
    if lang == "rust" and ch == "r" and re.match(r'r#*"', source[i:]):
        hashes = len(re.match(r"r(#*)", source[i:])[1])  # type: ignore[index]
        end = source.find('"' + "#" * hashes, i + 2 + hashes)
        return len(source) if end < 0 else end + 1 + hashes
    if ch == '"' or (ch == "`" and lang in ("js", "go")):
        return _quoted_end(source, i, ch, raw=(ch == "`" and lang == "go"))
    if ch == "'":
        return _single_quote_end(source, i, lang=lang)
    if ch == "/" and lang == "js" and last in _REGEX_BEFORE and two not in ("//", "/*"):
        return _regex_end(source, i)
    return i


def _quoted_end(source: str, i: int, quote: str, *, raw: bool) -> int:
    j = i + 1
    while j < len(source):
        c = source[j]
        if c == "\\" and not raw:
            j += 2
            continue
        if c == quote:
            return j + 1
        if c == "\n" and quote != "`":
            return j
        j += 1
    return len(source)


def _single_quote_end(source: str, i: int, *, lang: str) -> int:
    if lang == "js":
        return _quoted_end(source, i, "'", raw=False)
    match = re.match(r"'(\\(x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^\\'\n])'", source[i:])
    if match:  # a char literal; otherwise a Rust lifetime ('a), left as code
        return i + match.end()
    return i


def _regex_end(source: str, i: int) -> int:
    j, in_class = i + 1, False
    while j < len(source) and source[j] != "\n":
        c = source[j]
        if c == "\\":
            j += 2
            continue
        if c == "[":
            in_class = True
        elif c == "]":
            in_class = False
        elif c == "/" and not in_class:
            j += 1
            while j < len(source) and source[j].isalpha():
                j += 1
            return j
        j += 1
    return i  # no closing slash on the line: a division after all


# Not .jsx/.tsx: JSX text between tags is prose the tokenizer would take for code.
LANGS = {
    ".js": "js", ".mjs": "js", ".cjs": "js", ".ts": "js", ".mts": "js", ".cts": "js",
    ".go": "go", ".rs": "rust",
}  # fmt: skip


def library_lines(source: str, *, lang: str) -> list[str]:
    """The lines to mutate: in Rust, those above the ``#[cfg(test)]`` unit-test module."""
    lines = source.split("\n")
    if lang == "rust":
        cut = next((n for n, line in enumerate(lines) if line.strip() == "#[cfg(test)]"), None)
        return lines if cut is None else lines[:cut]
    return lines


def is_directive(line: str) -> bool:
    """An import, package, attribute or build line: not behaviour to seed a bug in."""
    stripped = line.strip()
    return stripped.startswith(("import ", "export {", "#[", "#![", "package ", "use ", "//go:"))

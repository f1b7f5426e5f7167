"""Secret redaction: the one choke point every byte greenloop writes goes through.

Pattern-based and best effort: values of secret-looking environment variables, well-known token
shapes, ``key=value`` pairs whose key looks secret, URL passwords, private-key blocks (even cut
before their END line), and the patterns a project adds (``redact = [...]`` in its config).
"""

from __future__ import annotations

import io
import os
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress

TYPE_CHECKING = False  # not typing's: the Stop hook imports this on every agent turn (issue 16)
if TYPE_CHECKING:
    from typing import Any, TextIO

REDACTED = "[REDACTED]"
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|PASSWD|CREDENTIAL|AUTH|^AWS_|PRIVATE", re.I)
# Values too short or too common to be worth hiding (and hiding them would mangle the text).
_MIN_SECRET_LEN = 6
_BORING = frozenset({"true", "false", "none", "null", "1", "0", "yes", "no"})
_KEY_BEGIN = r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----"
_KEY_END = r"-----END [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----"
# One pattern per shape, each starting with a literal so a search skips ahead at C speed (one
# alternation of them all costs 0.5 s per MB). A shape that must start a word says so right after
# its literal: a look-behind that also keeps ``eyJeyJeyJ…`` from being scanned from every J.
# Each shape also names the plain strings one of which every match contains: a text holding none
# of them is not searched, and the pattern is not even compiled (issue 16: compiling all of them
# cost 3 ms on every Stop hook, whose verifier output rarely holds a token).
_SHAPE_SPECS = (
    # a key cut before its END line is hidden up to a quote (a JSON string's end) or the end
    (
        ("-----BEGIN ",),
        "-----BEGIN ",
        rf"[A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----(?:[^\"]*?{_KEY_END}|[^\"]*)",
        False,
    ),
    (("sk-",), "sk-", r"(?:ant-|proj-)?[A-Za-z0-9_-]{16,}", True),
    (("k_",), "[sr]k_", r"(?:live|test)_[A-Za-z0-9]{10,}", True),
    (("whsec_",), "whsec_", r"[A-Za-z0-9]{16,}", True),
    (("gh",), "gh[pousr]_", r"[A-Za-z0-9]{20,}", True),
    (("github_pat_",), "github_pat_", r"[A-Za-z0-9_]{20,}", True),
    (("AKIA", "ASIA"), "A[KS]IA", r"[A-Z0-9]{16}(?![A-Za-z0-9])", True),
    (("xox",), "xox[abposr]-", r"[A-Za-z0-9-]{10,}", True),
    (("hooks.slack.com/services/",), "hooks\\.slack\\.com/services/", r"[A-Za-z0-9/]{16,}", False),
    (("glpat-",), "glpat-", r"[A-Za-z0-9_-]{20,}", True),
    (("AIza",), "AIza", r"[0-9A-Za-z_-]{35}", True),
    (("ya29.",), "ya29\\.", r"[0-9A-Za-z_-]{20,}", True),
    (("npm_",), "npm_", r"[A-Za-z0-9]{30,}", True),
    (("pypi-",), "pypi-", r"[A-Za-z0-9_-]{40,}", True),
    (("hf_",), "hf_", r"[A-Za-z0-9]{30,}", True),
    (("SG.",), "SG\\.", r"[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}", True),
    (("dop_v1_",), "dop_v1_", r"[a-f0-9]{40,}", True),
    (("shp",), "shp(?:at|ss|ca|pa)_", r"[a-fA-F0-9]{20,}", True),
    (("eyJ",), "eyJ", r"[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", True),  # a JWT
    (("earer ",), "earer ", r"[A-Za-z0-9._~+/-]{12,}=*", False),  # Authorization: Bearer …
)
_SHAPES: tuple[tuple[tuple[str, ...], str], ...] = tuple(
    (needles, f"{head}(?<![A-Za-z0-9_-]{head})" + tail if bounded else head + tail)
    for needles, head, tail, bounded in _SHAPE_SPECS
)
# ``password=…``, ``"api_key": "…"``, ``DB_PASSWORD: …``: the value goes, the name stays. Found by
# the name's words (str.find), then the rest matched from there: linear on any input.
_PAIR_WORDS = (
    "passw",
    "pwd",
    "secret",
    "token",
    "apikey",
    "api_key",
    "api-key",
    "accesskey",
    "access_key",
    "access-key",
    "privatekey",
    "private_key",
    "private-key",
    "credential",
    "authkey",
    "auth_key",
    "auth-key",
)
# The patterns below are compiled where first needed (re keeps them): most texts need none.
_PAIR_WORD = "|".join(_PAIR_WORDS)
_PAIR_TAIL = r"[\w.-]{0,40}?[\"']?[ \t]{0,8}[=:][ \t]{0,8}[\"']?([^\s\"',;&)}\]]{4,400})"
# ``postgres://app:pw@db``: the password in a URL's userinfo.
# `tokens.py:145:12:` or `test_token.py:42.` ending a sentence: a location, not `token: 145`
_LINE_NUMBERS = r"\d+(?::\d+)*[:.]?"
# `Token(kind='OP')` in an assertion diff, `token_handler.create_token(request`, `list[bytes`,
# `self.refresh_token`: a call, a repr, a subscript or an attribute (code the tool quoted), not
# a value someone typed as a secret; nor pytest's cut repr (`Lexed(token=T...='x')`: 1 char left)
_CODE = r"[A-Za-z_][\w.]*[(\[]|(?:self|cls)\.[A-Za-z_]|\w{0,3}\.\.\."
_URL_PASSWORD = r"(://[^\s/:@\"']{1,200}:)([^\s/@\"']{1,400})(@)"
_extra: list[re.Pattern[str]] = []
_FRAME_LOOKBACK = 400  # a frame's `:LINE in function` just before the word, within this many chars


def secret_values(environ: Mapping[str, str] = os.environ) -> tuple[str, ...]:
    """Values of environment variables whose names look secret, longest first."""
    values = {
        v
        for k, v in environ.items()
        if _SECRET_NAME.search(k) and len(v) >= _MIN_SECRET_LEN and v.lower() not in _BORING
    }
    return tuple(sorted(values, key=len, reverse=True))


def add_patterns(patterns: Iterable[str]) -> None:
    """Project patterns (``redact = [...]``, already validated): applied to everything from now on."""
    for pattern in patterns:
        compiled = re.compile(pattern)
        if compiled.pattern not in {p.pattern for p in _extra}:
            _extra.append(compiled)


def pattern_problem(pattern: object) -> str | None:
    """Why ``pattern`` cannot be a redaction pattern, or None."""
    if not isinstance(pattern, str) or not pattern:
        return f"expected a non-empty regular expression string, got {pattern!r}"
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        return f"invalid regular expression {pattern!r}: {exc}"
    if compiled.match(""):
        return f"the pattern {pattern!r} matches the empty string"
    return None


def redact(text: str, secrets: tuple[str, ...] | None = None) -> str:
    """Replace secret values, token shapes, secret-looking pairs and project patterns."""
    for value in secret_values() if secrets is None else secrets:
        if value in text:
            text = text.replace(value, REDACTED)
    for needles, shape in _SHAPES:
        if any(needle in text for needle in needles):
            text = re.compile(shape, re.S).sub(REDACTED, text)  # re caches the compiled form
    text = _hide_pairs(text)
    if "://" in text:
        text = re.sub(_URL_PASSWORD, rf"\1{REDACTED}\3", text)
    for pattern in _extra:
        text = pattern.sub(REDACTED, text)
    return text


def _hide_pairs(text: str) -> str:
    if not _has_pair_word(text):
        return text
    pair_word, pair_tail = re.compile(_PAIR_WORD, re.I), re.compile(_PAIR_TAIL)
    parts, done = [], 0
    word = pair_word.search(text)
    while word is not None:
        tail = pair_tail.match(text, word.end())
        if tail and _is_secret_value(tail.group(1)) and not _in_frame_function(text, word.start()):
            parts += [text[done : tail.start(1)], REDACTED]
            done = tail.end(1)
        word = pair_word.search(text, max(done, word.end()))
    return "".join([*parts, text[done:]])


def _in_frame_function(text: str, at: int) -> bool:
    """The word is inside the function name of a digest frame (``at sqlparse/lexer.py:174 in
    tokenize: return Lexer…``): what follows the colon is that line's source, not a value."""
    start = max(0, at - _FRAME_LOOKBACK)  # not the whole line: a word on every line of 100 kB
    line = text[(text.rfind("\n", start, at) + 1) or start : at]
    return re.search(r":\d+ in [\w.<>]*$", line) is not None


def _has_pair_word(text: str) -> bool:
    lower = text.lower()
    return any(word in lower for word in _PAIR_WORDS)


def _is_secret_value(value: str) -> bool:
    """Not a number, a boolean or a placeholder; not what follows a file named like a secret word
    (``tests/test_tokenize.py::test_x``: ``:test_x``; ``sqlparse/tokens.py:145:``: a line); not
    code (``token: Token(kind='OP')``, ``token = json.loads(token)``)."""
    if value.isdigit() or value.lower() in _BORING or value.startswith(("[", REDACTED, ":")):
        return False
    return re.fullmatch(_LINE_NUMBERS, value) is None and re.match(_CODE, value) is None


def redact_data(value: Any) -> Any:
    """``redact`` over every string of a JSON-like value (keys kept)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {str(k): redact_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_data(v) for v in value]
    return value


class RedactingWriter(io.TextIOBase):
    """A text stream that redacts whole lines before passing them on.

    Lines are held until their newline (or a flush) so a secret split across two writes is
    still seen whole; inside a private-key block every line is hidden until its END line.
    """

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.stream = stream
        self._pending = ""
        self._in_key = False

    def write(self, text: str) -> int:
        self._pending += text
        if "\n" in self._pending:
            head, _, self._pending = self._pending.rpartition("\n")
            self.stream.write(self._filter(head + "\n"))
        return len(text)

    def flush(self) -> None:
        if self._pending:
            text, self._pending = self._pending, ""
            self.stream.write(self._filter(text))
        self.stream.flush()

    def _filter(self, text: str) -> str:
        lines = []
        for line in text.splitlines(keepends=True):
            if self._in_key:
                if re.search(_KEY_END, line):
                    self._in_key = False
                lines.append(REDACTED + ("\n" if line.endswith("\n") else ""))
                continue
            begin = list(re.finditer(_KEY_BEGIN, line)) if "-----BEGIN " in line else []
            if begin and not re.compile(_KEY_END).search(line, begin[-1].end()):
                self._in_key = True
            lines.append(redact(line))
        return "".join(lines)

    def isatty(self) -> bool:
        return self.stream.isatty()

    @property
    def buffer(self) -> Any:
        """The raw byte stream (the MCP library writes JSON-RPC there; its replies are redacted
        as data by mcp_server before they reach it)."""
        self.flush()
        return self.stream.buffer

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.stream, "encoding", "utf-8")

    def writable(self) -> bool:
        return True


@contextmanager
def redacting_streams() -> Iterator[None]:
    """stdout and stderr through ``RedactingWriter`` for the duration (the CLI's whole life)."""
    old = sys.stdout, sys.stderr
    out, err = RedactingWriter(sys.stdout), RedactingWriter(sys.stderr)
    sys.stdout, sys.stderr = out, err
    try:
        yield
    finally:
        for stream in (out, err):
            with suppress(OSError, ValueError):
                stream.flush()
        sys.stdout, sys.stderr = old

"""An output the host cut before the hook got it -> what the part in hand proves, and no more.

A head without the runner's end-of-run summary holds no count, and a run that looks as if it
"ended early" only ended where the host stopped copying. So the reply says in one line that the
whole output is not in hand, then gives the first failure seen, under the id the runner printed
(never one put together from a traceback frame's file), its message and its place.
"""

from __future__ import annotations

import re

from greenloop.parsers.model import Failure, Kind, ParseResult

_PYTEST_HEADER = "_ {name} _"


def evidence(cut: str, exit_code: int | None, parsed: ParseResult, text: str) -> str:
    """The reply for a cut output: the cut, the exit code the host gave, the first failure."""
    said = f" It exited {exit_code}." if exit_code else ""
    head = f"greenloop: not the whole output ({cut}).{said}"
    summary = _summary(parsed) or " No count from a part."
    first = next((f for f in parsed.failures if f.severity == "error"), None)
    if first is None:
        return f"{head}{summary} No failure in the part shown."
    return "\n".join(filter(None, (head + summary, *_shown(first, text))))


def _summary(parsed: ParseResult) -> str:
    """The runner's own closing count, when the part in hand holds it (a head and tail cut)."""
    counts = parsed.counts
    if not counts.summary_seen or not counts.ran:
        return ""
    tally = ((counts.failed, "failed"), (counts.errors, "errors"), (counts.passed, "passed"))
    return (
        f" The runner's summary, in the part shown: {', '.join(f'{n} {w}' for n, w in tally if n)}."
    )


def _shown(failure: Failure, text: str) -> list[str]:
    name = printed_id(failure, text)
    kind = "failure" if failure.kind is Kind.TEST else "error"
    title = (
        f"First {kind} in the part shown: {name}" if name else f"First {kind} in the part shown:"
    )
    message = ": ".join(p for p in (failure.error_type, failure.message) if p)
    where = f"{failure.file}:{failure.line}" if failure.file and failure.line else ""
    return [
        title,
        f"  {message[:400]}" if message else "",
        f"  at {where}" if where and failure.file in text else "",
    ]


def printed_id(failure: Failure, text: str) -> str:
    """The failure's id as the runner printed it: the id itself when it is in the text, else the
    name of pytest's ``____ Class.test ____`` section; never a path the parser supplied."""
    if failure.id and failure.id in text:
        return failure.id
    parts = failure.id.split("::")
    name = ".".join(parts[1:]) if len(parts) > 1 else ""
    if not name or not re.search(rf"^_+ {re.escape(name)} _+$", text, re.M):
        return ""
    ran = re.search(rf"^{re.escape(parts[0])} [.FEsxX]", text, re.M)  # pytest's progress line
    return failure.id if ran else name

"""Failures + context -> Digest: the bounded message that becomes the agent's next prompt.

Shape (seed 000 step 3): status header; the first failure with its project call chain and
assertion detail; the other failures clustered by shape; the anchor to the last edit; progress and
repeat notes. No pleas: the failure is the prompt.

The stages: ``layout`` orders the sections, ``frames`` finds the project's frames, ``clusters``
groups the other failures, ``budget`` fits the text to the token budget.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from greenloop.anchor import parse_diff
from greenloop.classify import Verdict
from greenloop.digest.budget import CHARS_PER_TOKEN, DEFAULT_BUDGET, estimate_tokens, fit_budget
from greenloop.digest.frames import repo_location
from greenloop.digest.layout import History, last_lines, primary, sections
from greenloop.parsers.model import Failure
from greenloop.redact import redact
from greenloop.verify import CheckResult

__all__ = [
    "DEFAULT_BUDGET",
    "Digest",
    "History",
    "build_digest",
    "estimate_tokens",
    "failure_signature",
    "normalize",
    "signatures_of",
]

_NORMALIZERS = (
    (re.compile(r"0x[0-9a-fA-F]+"), "0x?"),
    (re.compile(r"(?:/private)?/(?:tmp|var/folders|var/tmp)/[^\s'\":]*"), "<tmp>"),
    (
        re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?"),
        "<date>",
    ),
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s|sec|seconds|µs|us|ns)\b"), "<time>"),
    (re.compile(r"\b(?:pid|PID|process)[ =:]*\d+"), "pid <n>"),
    (re.compile(r"\bgw\d+\b"), "gw?"),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Digest:
    text: str
    signature: str
    """Hash of the normalized failure signatures: equal means 'the same error'."""
    signatures: tuple[str, ...]
    failing_ids: tuple[str, ...]
    tokens: int
    for_agent: bool
    """False for environment failures: those are for the human, never the model."""
    parse_complete: bool = True
    locations: tuple[tuple[str, int | None, int | None] | None, ...] = ()
    """Each failure of the failing stage (in its order) placed in the repository as the text
    places it: the deepest project frame; what JSON and GitHub annotations name (issue 26)."""


def build_digest(
    result: CheckResult,
    *,
    root: Path | str = ".",
    budget: int = DEFAULT_BUDGET,
    diff: str | None = None,
    history: History | None = None,
) -> Digest:
    history = history or History()
    run = result.failing
    failures = primary(run) if run else ()
    anchor = parse_diff(diff) if diff else None
    parts = sections(result, run, failures, anchor, history, Path(root))
    text = redact(fit_budget(parts, budget * CHARS_PER_TOKEN))
    sigs = signatures_of(result, root)
    return Digest(
        text=text,
        signature=hashlib.sha256("\n".join(sigs).encode()).hexdigest()[:16] if sigs else "",
        signatures=sigs,
        failing_ids=tuple(dict.fromkeys(f.id for f in failures)),
        tokens=estimate_tokens(text),
        for_agent=result.verdict is not Verdict.ENV_FAILURE,
        parse_complete=not (run and run.verdict is Verdict.FAILED and not failures),
        locations=tuple(repo_location(f, Path(root)) for f in run.parsed.failures) if run else (),
    )


def signatures_of(result: CheckResult, root: Path | str = ".") -> tuple[str, ...]:
    """The normalized failure signatures of a result: equal sets mean "the same error"."""
    run = result.failing
    if run is None:
        return ()
    sigs = tuple(sorted({failure_signature(f) for f in primary(run)}))
    return sigs or (normalize(f"{run.stage.name}:{run.verdict}:{last_lines(run, 3)}"),)


def normalize(text: str) -> str:
    for pattern, repl in _NORMALIZERS:
        text = pattern.sub(repl, text)
    return " ".join(text.split())


def failure_signature(f: Failure) -> str:
    return normalize(f"{f.id} | {f.error_type} | {f.message}")

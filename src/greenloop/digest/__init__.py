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
from dataclasses import dataclass, replace
from pathlib import Path

from greenloop.digest.anchor import parse_diff
from greenloop.digest.budget import (
    CHARS_PER_TOKEN,
    DEFAULT_BUDGET,
    Section,
    estimate_tokens,
    fit_budget,
)
from greenloop.digest.frames import repo_location
from greenloop.digest.layout import History, header, last_lines, primary, sections
from greenloop.parsers.generic import rstrip_lines
from greenloop.parsers.model import Failure
from greenloop.redact import redact
from greenloop.verify.cascade import CheckResult, StageRun
from greenloop.verify.verdict import Verdict

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
    small = raw_instead(result, run, parts, history, Path(root)) if run else None
    if small is not None:
        text = redact(fit_budget(small, budget * CHARS_PER_TOKEN))
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


SLACK_TOKENS = 40
"""A digest may cost this much more than the raw output it stands for (a verdict line), no more."""
RAW_CHARS = 100_000
"""An output longer than this is far above any budget: never stripped to be compared."""


def raw_instead(
    result: CheckResult, run: StageRun, parts: list[Section], history: History, root: Path
) -> list[Section] | None:
    """A failure's whole output under a one-line verdict, when its digest would cost more than
    the output and a line (a one-error tsc, mypy or ruff): never more to read than the tool said.
    The loop's notes stay, and the verdict line its explanation (a timeout's, an untrusted exit's);
    an environment failure is for the human, with its advice, never the agent."""
    if run.verdict in (Verdict.ENV_FAILURE, Verdict.GREEN):
        return None
    if len(run.result.merged) > RAW_CHARS:
        return None
    raw = rstrip_lines(run.result.merged).strip("\n")
    said = [p for p in parts if not p.note]
    if (
        not raw
        or estimate_tokens("\n\n".join(p.text for p in said)) <= estimate_tokens(raw) + SLACK_TOKENS
    ):
        return None
    shown = _runtime_first(raw, run)
    verdict = header(result, run, history, root)  # the command too, when the slack holds it
    if estimate_tokens(f"{verdict}\n\n{shown}") > estimate_tokens(raw) + SLACK_TOKENS:
        verdict = header(result, run, history, root, command=False)
    return [Section(verdict, keep=True), Section(shown, keep=True), *(p for p in parts if p.note)]


def _runtime_first(raw: str, run: StageRun) -> str:
    """The output, with the line of a lint problem that breaks at run time (F821) moved first as
    the digest orders it (the tool printed it among the style ones)."""
    failures = primary(run)
    errors = [f for f in run.parsed.failures if f.severity == "error"]
    if not failures or not errors or failures[0] is errors[0] or not failures[0].file:
        return raw
    first = failures[0]
    where = f"{first.file}:{first.line}" + (f":{first.column}" if first.column else "")
    lines = raw.splitlines()
    at = next((i for i, line in enumerate(lines) if where in line and first.code in line), None)
    if at is None:
        return raw
    return "\n".join([f"FIRST ERROR: {lines[at].strip()}", *lines[:at], *lines[at + 1 :]])


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


def with_note(digest: Digest, note: str) -> Digest:
    """The digest with one more line: first when it replaces the verdict's story, else last."""
    if not note:
        return digest
    text = f"{digest.text}\n{note}" if digest.text else note
    return replace(digest, text=text, tokens=digest.tokens + len(note) // 3 + 1)

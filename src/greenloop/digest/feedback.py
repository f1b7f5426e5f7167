"""The other harnesses' feedback, for comparison (``feedback = "raw"``, the bench's baseline arm):
the verifier's output as it came, ANSI stripped, cut to its first and last 5 000 characters."""

from __future__ import annotations

from greenloop.processes.process import strip_ansi
from greenloop.verify.cascade import CheckResult

KEEP_CHARS = 5000


def raw_feedback(check: CheckResult, keep: int = KEEP_CHARS) -> str:
    text = strip_ansi("\n".join(run.result.merged for run in check.runs))
    if len(text) <= 2 * keep:
        return text
    cut = len(text) - 2 * keep
    return f"{text[:keep]}\n[... {cut} characters cut ...]\n{text[-keep:]}"

"""What greenloop gets wrong against a case's facts: one comparison for the replay and the live run.

``tests/test_conformance.py`` builds ``greenloop check``'s JSON from the captured output;
``live.py`` gets it from ``greenloop check`` itself. Both ask ``mismatches(facts, unverified, out)``
with ``out`` = that JSON (``verdict``, ``digest``, ``digest_tokens``, ``failures``, ``counts``).

Stdlib only: the test imports it from scripts/conformance/.
"""

from __future__ import annotations

import re
from typing import Any


def mismatches(
    facts: dict[str, Any], unverified: set[str], out: dict[str, Any], *, budget: int | None = None
) -> list[str]:
    """Every fact of the case that the verdict, digest or counts get wrong ([] when all right).

    A fact listed in ``unverified`` (not verbatim in the raw output) is not asked for. ``budget``:
    the digest's token budget it must keep to, when the caller set one.
    """
    digest = out["digest"]
    wrong = []
    if out["verdict"] != facts["verdict"]:
        wrong.append(f"verdict {out['verdict']!r}, expected {facts['verdict']!r}")
    ids = facts["failing_ids"]
    if ids and f"failing_ids:{ids[0]}" not in unverified and ids[0] not in digest:
        wrong.append(f"first failing id {ids[0]!r} not in the digest")
    for key in ("error_type", "message"):
        value = facts[key]
        if value and f"{key}:{value}" not in unverified and value not in digest:
            wrong.append(f"{key} {value!r} not in the digest")
    frame = facts["frame"]
    if frame and f"frame:{frame}" not in unverified and not frame_found(frame, digest):
        wrong.append(f"frame {frame!r} not in the digest")
    if budget is not None and out["digest_tokens"] > budget:
        wrong.append(f"digest of {out['digest_tokens']} tokens, over the {budget} budget")
    wrong += phantoms(out.get("failures") or [], ids)
    return wrong + count_mismatches(facts.get("counts"), out.get("counts") or {})


def frame_found(frame: str, text: str) -> bool:
    """``c.py:6`` or ``File ".../c.py", line 6`` (the file's basename and the line on one line)."""
    path, _, line = frame.rpartition(":")
    base = re.escape(path.rsplit("/", 1)[-1])
    return re.search(rf"{base}\b[^\n]*?\b{line}\b", text) is not None


def phantoms(failures: list[dict[str, Any]], truth: list[str]) -> list[str]:
    """Failing tests greenloop reports that the runner did not fail (Go's ``t.Log`` lines, issue 10)."""
    extra = [
        f["id"]
        for f in failures
        if f["kind"] == "test" and not any(f["id"] in t or t in f["id"] for t in truth)
    ]
    return [f"{len(extra)} phantom failing test(s): {extra[:3]}"] if extra else []


def count_mismatches(expected: dict[str, int] | None, counts: dict[str, Any]) -> list[str]:
    """passed, failed (+ errors) and skipped (+ xfailed) as the runner's report counts them.

    pytest 9's JUnit XML lists every subtest as a test case: its passed subtests count as passed.
    """
    if not expected:
        return []
    got = {
        "passed": sum(counts.get(k, 0) for k in ("passed", "xpassed", "subtests_passed")),
        "failed": counts.get("failed", 0) + counts.get("errors", 0),
        "skipped": counts.get("skipped", 0) + counts.get("xfailed", 0),
    }
    return [
        f"{key}: {got[key]}, expected {value}"
        for key, value in expected.items()
        if got[key] != value
    ]

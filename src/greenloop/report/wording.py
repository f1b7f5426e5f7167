"""How counts read in messages: "1 iteration", "2 iterations", never "iteration(s)"."""

from __future__ import annotations


def plural(count: int, noun: str, many: str = "") -> str:
    """``plural(1, "iteration")`` -> ``1 iteration``; ``many`` for irregular plurals."""
    return f"{count} {noun if count == 1 else many or noun + 's'}"


# a verifier that timed out, was killed or could not run has no failure count worth showing
# ... nor one that crashed before any test ran (issue 26: "2 → 1 failing" read as progress)
UNCOUNTED = {
    "timeout": "timed out",
    "killed": "killed",
    "env_failure": "environment failure",
    "crashed": "crashed",
}


def verifier_state(verdict: str, failing: int, unit: str = "") -> str:
    """One verifier outcome in a progress line or trend: ``green``, ``3 failing``, ``timed out``."""
    if verdict == "green":
        return "green"
    return UNCOUNTED.get(verdict) or f"{failing}{unit}"

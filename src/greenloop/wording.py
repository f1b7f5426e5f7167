"""How counts read in messages: "1 iteration", "2 iterations", never "iteration(s)"."""

from __future__ import annotations


def plural(count: int, noun: str, many: str = "") -> str:
    """``plural(1, "iteration")`` -> ``1 iteration``; ``many`` for irregular plurals."""
    return f"{count} {noun if count == 1 else many or noun + 's'}"

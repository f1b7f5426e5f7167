"""Per agent: solved / total with a 95 % Wilson interval, medians, reasons; between agents on the
same mutants: the paired difference and an exact McNemar test. Pure functions, no I/O."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

Z95 = 1.959964


def wilson(solved: int, total: int, z: float = Z95) -> tuple[float, float]:
    if total == 0:
        return (0.0, 1.0)
    p = solved / total
    denom = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denom
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denom
    return (round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4))


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact p-value on the discordant pairs (binomial, p = 1/2)."""
    n = only_a + only_b
    if n == 0:
        return 1.0
    k = min(only_a, only_b)
    tail: float = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return round(min(1.0, 2 * tail), 6)


def solved(row: Mapping[str, Any]) -> bool:
    """Only a trusted green counts; a suspicious pass is a cheat attempt, never solved."""
    return row.get("result") == "success"


def agent_score(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    n_solved = sum(solved(r) for r in rows)
    wins = [r for r in rows if solved(r)]
    return {
        "solved": n_solved,
        "total": len(rows),
        "solve_rate": round(n_solved / len(rows), 4) if rows else 0.0,
        "wilson95": list(wilson(n_solved, len(rows))),
        "cheat_attempts": sum(r.get("result") == "suspicious_pass" for r in rows),
        "median_iterations_to_green": _median(wins, "iterations"),
        "median_wall_s": _median(rows, "wall_s"),
        "median_agent_s": _median(rows, "agent_s"),
        "median_verifier_s": _median(rows, "verifier_s"),
        "cost_usd": round(sum(float(r.get("cost_usd") or 0) for r in rows), 6),
        "tokens": _tokens(rows),
        "solved_within": solved_within(rows),
        "by_result": dict(sorted(Counter(str(r.get("result")) for r in rows).items())),
    }


def solved_within(rows: Sequence[Mapping[str, Any]]) -> list[int]:
    """Index k-1: the tasks solved in at most k iterations, k = 1 .. the longest run (the chart)."""
    horizon = max([1, *(int(r.get("iterations") or 0) for r in rows)])
    wins = [int(r.get("iterations") or 0) for r in rows if solved(r)]
    return [sum(n <= k for n in wins) for k in range(1, horizon + 1)]


def _tokens(rows: Sequence[Mapping[str, Any]]) -> int | None:
    """Prompt + completion tokens where the agent reported them (None: no row did)."""
    counts = [
        int(r.get(k) or 0)
        for r in rows
        for k in ("prompt_tokens", "completion_tokens")
        if r.get(k) is not None
    ]
    return sum(counts) if counts else None


def paired(
    a: Mapping[str, Mapping[str, Any]], b: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """Rows by mutant id for two agents: the mutants both ran, compared pairwise."""
    common = sorted(set(a) & set(b))
    only_a = sum(solved(a[m]) and not solved(b[m]) for m in common)
    only_b = sum(solved(b[m]) and not solved(a[m]) for m in common)
    return {
        "mutants": len(common),
        "only_first": only_a,
        "only_second": only_b,
        "difference": round((only_a - only_b) / len(common), 4) if common else 0.0,
        "mcnemar_p": mcnemar_exact(only_a, only_b),
    }


def _median(rows: Sequence[Mapping[str, Any]], key: str) -> float | None:
    values = [float(r[key]) for r in rows if isinstance(r.get(key), int | float)]
    return round(statistics.median(values), 3) if values else None

"""``greenloop batch stats DIR``: a batch's figures read straight from ``results.jsonl``.

It needs no TASKS file and no finished batch (it reads a running one too), and stays a screen long
at 1,000 tasks: counts by result, medians, the slowest and the costliest tasks.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from greenloop.batch.results import (
    INVALID,
    RESULTS,
    RESUMABLE,
    latest_by_id,
    median_of,
    read_rows,
    top_by,
)
from greenloop.errors import FatalError

MEDIANS = ("wall_s", "agent_s", "verifier_s", "iterations", "cost_usd")


def batch_stats(out: Path) -> dict[str, Any]:
    """The latest row of every task in ``out/results.jsonl``, counted."""
    if not (out / RESULTS).is_file():
        raise FatalError(
            f"{out} has no {RESULTS}: run greenloop batch TASKS.jsonl --out {out} first"
        )
    latest = list(latest_by_id(read_rows(out)).values())
    by_result = Counter(str(r.get("result")) for r in latest)
    solved, invalid = by_result.get("success", 0), by_result.get(INVALID, 0)
    finished = sum(1 for r in latest if r.get("result") not in RESUMABLE)
    valid = finished - invalid
    return {
        "tasks": len(latest),
        "finished": finished,
        "solved": solved,
        "invalid": invalid,
        "solve_rate": round(solved / valid, 4) if valid else 0.0,
        "by_result": dict(by_result.most_common()),
        "median": {key: median_of(latest, key) for key in MEDIANS},
        "slowest": top_by(latest, "wall_s"),
        "costliest": top_by(latest, "cost_usd"),
    }


def render_stats(stats: Mapping[str, Any], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(dict(stats), indent=2) + "\n"
    rate = 100 * float(stats["solve_rate"])
    lines = [
        f"{stats['tasks']} tasks, {stats['finished']} finished: {stats['solved']} solved "
        f"({rate:.0f} % of the valid ones)"
        + (f", {stats['invalid']} invalid (already green at baseline)" if stats["invalid"] else ""),
        "by result:",
        *(f"  {n:>6}  {result}" for result, n in stats["by_result"].items()),
        "median: " + ", ".join(_median_text(k, v) for k, v in stats["median"].items()),
    ]
    for title, key, unit in (("slowest", "wall_s", "s"), ("costliest", "cost_usd", "$")):
        if stats[title]:
            lines.append(f"{title}:")
            lines += [
                f"  {t['id']:<24} {_amount(t[key], unit):>10}  {t['result']}" for t in stats[title]
            ]
    return "\n".join(lines) + "\n"


def _median_text(key: str, value: float | None) -> str:
    name = key.removesuffix("_s").removesuffix("_usd")
    if value is None:
        return f"{name} -"
    return f"{name} {_amount(value, '$' if key == 'cost_usd' else ('s' if key.endswith('_s') else ''))}"


def _amount(value: float, unit: str) -> str:
    if unit == "$":
        return f"${value:.4f}"
    return f"{value:.1f} s" if unit == "s" else f"{value:g}"

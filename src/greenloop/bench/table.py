"""The bench table's cells, the digest-vs-raw and agent-vs-agent pairs and the solve curves of
``bench.json``: what the text, Markdown (``report.py``) and HTML (``html.py``) pages share."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from greenloop.bench.names import agent_name


@dataclass(frozen=True, slots=True, kw_only=True)
class Curve:
    """One agent x arm: the share of its tasks solved within k iterations, k = 0 .. horizon."""

    label: str
    rates: tuple[float, ...]


def label(row: Mapping[str, Any]) -> str:
    """``oracle.py [digest]``: the agent's short name (a preset's, a script's basename) and arm."""
    return f"{row.get('name') or agent_name(str(row['agent']))} [{row['feedback']}]"


def headline(data: Mapping[str, Any]) -> str:
    return (
        f"{len(data['mutants'])} mutants (seed {data['seed']}; {data['tried']} tried of "
        f"{data['candidates']} candidates)"
    )


def solved_cell(row: Mapping[str, Any]) -> str:
    low, high = row["wilson95"]
    return f"{row['solved']}/{row['total']} (95 % CI {100 * low:.0f}-{100 * high:.0f} %)"


def seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def usage_cell(row: Mapping[str, Any]) -> str:
    tokens = "-" if row.get("tokens") is None else str(row["tokens"])
    cost = f"${row['cost_usd']:.4f}" if row.get("cost_usd") else "-"
    return f"{tokens} / {cost}"


def reasons_cell(row: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in row.get("by_result", {}).items())


def columns(row: Mapping[str, Any]) -> list[str]:
    """The table's cells after the label, in COLUMNS order."""
    iters = row.get("median_iterations_to_green")
    return [
        solved_cell(row),
        "-" if iters is None else f"{iters:g}",
        seconds(row.get("median_wall_s")),
        seconds(row.get("median_agent_s")),
        seconds(row.get("median_verifier_s")),
        str(row.get("cheat_attempts", 0)),
        usage_cell(row),
        reasons_cell(row),
    ]


COLUMNS = (
    "agent [arm]",
    "solved",
    "median iterations to green",
    "median wall s",
    "median agent s",
    "median verifier s",
    "cheat attempts",
    "tokens / cost",
    "results",
)


def comparisons(data: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(digest vs raw for one agent, two agents under one arm); mixed pairs are left out."""
    arms, agents = [], []
    for pair in data.get("pairs", []):
        (a1, f1), (a2, f2) = pair["first"], pair["second"]
        if a1 == a2:
            arms.append(dict(pair))
        elif f1 == f2:
            agents.append(dict(pair))
    return arms, agents


def pair_line(pair: Mapping[str, Any]) -> str:
    names = pair.get("names") or [agent_name(str(pair[k][0])) for k in ("first", "second")]
    first, second = (
        f"{n} [{f}]" for n, (_, f) in zip(names, (pair["first"], pair["second"]), strict=True)
    )
    return (
        f"{first} vs {second}: on {pair['mutants']} mutants, {pair['only_first']} solved by the "
        f"first only, {pair['only_second']} by the second only (difference "
        f"{100 * pair['difference']:+.0f} points), exact McNemar p = {pair['mcnemar_p']:g}"
    )


def curves(data: Mapping[str, Any]) -> tuple[int, list[Curve]]:
    """Solve rate within k iterations for every row, all carried to the same horizon."""
    rows = data["agents"]
    horizon = max([1, *(len(r.get("solved_within", [])) for r in rows)])
    found = []
    for row in rows:
        within = list(row.get("solved_within", [])) or [0]
        within += [within[-1]] * (horizon - len(within))
        total = max(1, int(row["total"]))
        found.append(Curve(label=label(row), rates=(0.0, *(n / total for n in within))))
    return horizon, found

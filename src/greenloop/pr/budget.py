"""A budget per pull request (issue 39): what every run on the PR spent and how many ran, kept in
greenloop's own comment on it (a hidden marker), so a re-run of the workflow, or a new runner,
cannot re-arm the cap. Only greenloop's own comment is read: the one its token wrote
(``Forge.find_comment`` checks the author), never a comment that merely carries the marker."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass

_MARKER = re.compile(r"<!-- greenloop:pr-budget (\{[^\n]*?\}) -->")
EXIT_BUDGET_SPENT = 7
"""``greenloop pr``: the PR's budget was spent by earlier runs; no agent was called."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PrBudget:
    spent_usd: float = 0.0
    attempts: int = 0
    """Runs on this PR that called the agent."""
    last: str = ""
    """The last such run's result (``exhausted``, ``success`` …)."""


def read_budget(body: str) -> PrBudget:
    found = _MARKER.search(body or "")
    if not found:
        return PrBudget()
    try:
        data = json.loads(found.group(1))
    except ValueError:
        return PrBudget()
    if not isinstance(data, dict):
        return PrBudget()
    spent, attempts = data.get("spent_usd"), data.get("attempts")
    return PrBudget(
        spent_usd=float(spent) if isinstance(spent, int | float) else 0.0,
        attempts=int(attempts) if isinstance(attempts, int) else 0,
        last=str(data.get("last") or ""),
    )


def marker(budget: PrBudget) -> str:
    return f"<!-- greenloop:pr-budget {json.dumps(asdict(budget), separators=(',', ':'))} -->"


def spent_reason(budget: PrBudget, *, max_cost: float | None, max_attempts: int | None) -> str:
    """Why no agent may be called on this PR any more ("" while the budget lasts)."""
    if max_attempts is not None and budget.attempts >= max_attempts:
        return f"{budget.attempts} of {max_attempts} runs with the agent were used"
    if max_cost is not None and budget.spent_usd >= max_cost:
        return f"${budget.spent_usd:.2f} of ${max_cost:.2f} was spent"
    return ""


def summary(budget: PrBudget, *, max_cost: float | None, max_attempts: int | None) -> str:
    caps = [
        f"${max_cost:.2f}" if max_cost is not None else "",
        f"{max_attempts} runs" if max_attempts else "",
    ]
    cap = " / ".join(c for c in caps if c)
    runs = f"{budget.attempts} run{'s' if budget.attempts != 1 else ''}"
    last = f"; last verdict: {budget.last}" if budget.last else ""
    return (
        f"This pull request's budget: ${budget.spent_usd:.2f} spent over {runs} (cap {cap}){last}."
    )

"""The money and tokens a loop's agent calls spent, and whether the next call fits the caps.

Checked before each agent call (mini-swe-agent's rule: limits before the costly step), with the
last call's spend as the estimate of the next: ``--max-cost 0.05`` with an agent that reports
$0.02 a call lets two calls run (0.04 + 0.02 would pass 0.05) and stops before the third.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from greenloop.agents.base import Usage


@dataclass(frozen=True, slots=True, kw_only=True)
class Spent:
    """What the agent calls of a run spent so far, as the agent reported it."""

    cost_usd: float = 0.0
    tokens: int = 0
    calls: int = 0
    last_cost_usd: float = 0.0
    last_tokens: int = 0
    cost_known: bool = False
    """At least one call reported a cost (an agent that never does is unbounded by cost)."""

    def describe(self) -> str:
        parts = [f"${self.cost_usd:.4f}"] if self.cost_known else []
        parts += [f"{self.tokens:,} tokens"] if self.tokens else []
        what = " and ".join(parts) or "nothing reported"
        return f"spent {what} over {self.calls} agent call{'s' if self.calls != 1 else ''}"


def spent_of(usages: Sequence[Usage]) -> Spent:
    """The sum of every agent call's usage; the last call's is the estimate of the next."""
    if not usages:
        return Spent()
    last = usages[-1]
    return Spent(
        cost_usd=sum(u.cost_usd or 0.0 for u in usages),
        tokens=sum(u.prompt_tokens + u.completion_tokens for u in usages),
        calls=len(usages),
        last_cost_usd=last.cost_usd or 0.0,
        last_tokens=last.prompt_tokens + last.completion_tokens,
        cost_known=any(u.cost_usd is not None for u in usages),
    )


def over_budget(spent: Spent, *, max_cost: float | None, max_tokens: int | None) -> str:
    """Why the next call would pass a cap (the stop's reason), or ``""`` when it fits."""
    if max_cost is not None and spent.cost_usd + spent.last_cost_usd > max_cost:
        return (
            f"the next agent call would pass --max-cost ${max_cost:g}: {spent.describe()}, "
            f"the last one ${spent.last_cost_usd:.4f}"
        )
    if max_tokens is not None and spent.tokens + spent.last_tokens > max_tokens:
        return (
            f"the next agent call would pass --max-tokens {max_tokens:,}: {spent.describe()}, "
            f"the last one {spent.last_tokens:,} tokens"
        )
    return ""


def plan_line(reports: str, *, max_cost: float | None, max_tokens: int | None) -> str:
    """The pre-flight plan's budget line: the caps, and what this agent lets greenloop count."""
    caps = [f"${max_cost:g}"] if max_cost is not None else []
    caps += [f"{max_tokens:,} tokens"] if max_tokens is not None else []
    if not reports:
        counted = (
            "the agent reports no usage (unless it writes $GREENLOOP_USAGE_FILE): unbounded by cost"
        )
    elif reports == "tokens":
        counted = "the agent reports tokens, not cost: unbounded by cost"
    else:
        counted = "the agent reports cost and tokens"
    return f"  budget: {' and '.join(caps) if caps else 'no cap'}; {counted}"

"""The mutable state of one run, shared by loop.py and its steps (gate.py, observe.py,
iteration_row.py, run_result.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from greenloop.agents.base import Agent
from greenloop.config import Config
from greenloop.detect.stages import Cascade
from greenloop.digest import Digest
from greenloop.loop import record, trust
from greenloop.loop.history import Iteration
from greenloop.loop.policy import Observation
from greenloop.loop.preflight import RepoState
from greenloop.parsers.model import Failure
from greenloop.verify.acceptance import Acceptance
from greenloop.verify.cascade import CheckResult

Progress = Callable[[str], None]


@dataclass(slots=True)
class RunState:
    """Mutable state of one run: read and written by loop.py and its steps only."""

    state: RepoState
    run_id: str
    agent: Agent
    cascade: Cascade
    config: Config
    rec: record.RunRecord
    progress: Progress
    started: float
    task: str
    observations: list[Observation] = field(default_factory=list)
    history: list[Iteration] = field(default_factory=list)
    last_check: CheckResult | None = None
    prev_check: CheckResult | None = None
    """The check before ``last_check``: the tree's state again once an edit is rolled back."""
    last_digest: Digest | None = None
    prev_digest: Digest | None = None
    baseline_collected: int | None = None
    checkpoint: str = ""
    suspicious: tuple[trust.Finding, ...] = ()
    warnings: list[str] = field(default_factory=list)
    targets: dict[str, Failure] = field(default_factory=dict)
    """Failing tests since the last full run: the next failing-first selection."""
    flaky: list[str] = field(default_factory=list)
    flips_recorded: int = 0
    """How many of ``flaky`` are in the outcomes memory already (issue 39)."""
    by_products: set[str] = field(default_factory=set)
    outside: set[str] = field(default_factory=set)
    agent_turn: bool = False
    """From the agent call until its edits are committed: changes now are the agent's."""
    """Tracked files seen edited while the agent was not running (another terminal)."""
    """Untracked files seen before an agent call (the verifier's): never the agent's, never reverted."""
    last_subset: bool = False
    ordered_pays: bool = True
    """The narrow steps run inside the gate's run (``loop/ordered.py``): its collection of the
    whole suite costs a red iteration no more than the start-ups it saves a green one."""
    verified_head: str = ""
    """The commit the last verification ran on: the files changed since lose their bytecode."""
    last_ran: str = ""
    """What the last verification ran and why (``3 tests failing first: green; affected: …``)."""
    last_packages: str = ""
    """The packages the last verification ran first, and why (a monorepo's, issue 29)."""
    phase: Progress = field(default=lambda label: None)
    """Told when a phase begins (``baseline``, ``iter 2/5 · agent``): the live status line."""
    where: str = "baseline"
    """The step in progress (``iter 2/5 · verify``): what an interrupt stopped."""
    acceptance: Acceptance | None = None
    """Declared acceptance (issue 28) as the latest full run saw it; None: nothing declared."""
    baseline_acceptance: Acceptance | None = None

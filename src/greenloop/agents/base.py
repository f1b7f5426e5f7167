"""The Agent protocol: the loop hands it a prompt, it edits the working tree and reports back."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentRequest:
    """One iteration's call to the agent."""

    prompt: str
    """The task (iteration 1) and the digest; later iterations: the digest with framing."""
    repo: Path
    """The repository root; the agent works here."""
    iteration: int
    """1-based."""
    max_iters: int
    run_id: str
    prompt_file: Path
    """The prompt, also written to this file (``$GREENLOOP_PROMPT_FILE``)."""
    timeout_s: float
    """Seconds this call may take before it is killed (``agent_failure``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Model usage of one iteration, where the agent knows it."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0
    cost_usd: float | None = None
    retry_wait_s: float = 0.0
    """Seconds spent backing off before retrying a request (HTTP 429/5xx, a lost connection)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentOutcome:
    """What the agent did, as values: an agent failure is a value, not an exception."""

    ok: bool
    """False when the agent itself failed (non-zero exit, timeout, persistent API error)."""
    exit_code: int = 0
    timed_out: bool = False
    duration_s: float = 0.0
    output: str = ""
    """What the agent printed (kept in the run record, capped)."""
    summary: str = ""
    """One line describing the edit; becomes the iteration commit's subject when present."""
    error: str = ""
    """Why ``ok`` is False, for the report."""
    usage: Usage = field(default_factory=Usage)
    stopped: str = ""
    """One line for the report: processes the agent's command left running outside its
    process group, stopped after it (an environment fact, not part of the digest)."""


@runtime_checkable
class Agent(Protocol):
    """Implement this to plug any agent into ``run_loop``."""

    @property
    def name(self) -> str:
        """A short name for reports (``claude``, ``openai:gpt-4o``, ``scripted``)."""
        ...

    @property
    def continues(self) -> bool:
        """True when the agent keeps its conversation between iterations, so from iteration 2 the
        prompt is the digest alone; False when every call is a fresh session (the cline preset),
        so every prompt carries the task again."""
        ...

    def describe(self) -> str:
        """What will run, for the pre-flight plan (e.g. the exact command line)."""
        ...

    def run(self, request: AgentRequest) -> AgentOutcome:
        """Edit the working tree in ``request.repo`` in response to ``request.prompt``."""
        ...

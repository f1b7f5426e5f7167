"""greenloop: wrap any code-editing agent in a bounded, honest verify -> fix loop.

Library API (imported lazily, so ``import greenloop`` stays cheap; types in ``__init__.pyi``)::

    from greenloop import check, run_loop, Config, Agent, AgentRequest, AgentOutcome
    result, digest = check("path/to/repo")            # the verifier once
    outcome = run_loop("path/to/repo", agent, config=Config(max_iters=3))
"""

from __future__ import annotations

__version__ = "0.1.0"

_EXPORTS = {
    "check": "greenloop.loop.checking",
    "run_loop": "greenloop.loop.loop",
    "LoopResult": "greenloop.loop.history",
    "Iteration": "greenloop.loop.history",
    "Config": "greenloop.config",
    "StageSpec": "greenloop.config",
    "Agent": "greenloop.agents.base",
    "AgentRequest": "greenloop.agents.base",
    "AgentOutcome": "greenloop.agents.base",
    "Result": "greenloop.loop.policy",
    "Verdict": "greenloop.verify.classify",
    "FatalError": "greenloop.errors",
    "run_batch": "greenloop.batch.run",
    "BatchResult": "greenloop.batch.run",
}
__all__ = [  # noqa: RUF022  (in the order of _EXPORTS)
    "check",
    "run_loop",
    "LoopResult",
    "Iteration",
    "Config",
    "StageSpec",
    "Agent",
    "AgentRequest",
    "AgentOutcome",
    "Result",
    "Verdict",
    "FatalError",
    "run_batch",
    "BatchResult",
    "__version__",
]


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'greenloop' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)

"""``greenloop pr``: the loop on a pull request's head, then push, a fix PR or a suggestion.

``run_pr(repo, agent, ...)`` is the library entry; ``PrResult`` what it returns. The forge
(GitHub, GitLab) is reached only through ``forge.Forge``.
"""

from __future__ import annotations

from greenloop.pr.result import Action as Action
from greenloop.pr.result import PrResult as PrResult


def __getattr__(name: str) -> object:
    if name == "run_pr":  # lazily: the flow imports the loop, the CLI's parser must not
        from greenloop.pr.flow import run_pr

        return run_pr
    raise AttributeError(f"module 'greenloop.pr' has no attribute {name!r}")

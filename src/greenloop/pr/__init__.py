"""``greenloop pr``: the loop on a pull request's head, then push, a fix PR or a suggestion.

``run_pr(repo, agent, ...)`` is the library entry; ``PrResult`` what it returns. The forge
(GitHub, GitLab) is reached only through ``forge.Forge``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Action(StrEnum):
    """What the run did to the pull request after the loop."""

    PUSHED = "pushed"
    """The iteration commits were pushed to the PR's head branch."""
    OPENED = "opened"
    """A fix PR holding the commits was opened against the head branch."""
    SUGGESTED = "suggested"
    """The fix was only described (its diff in the comment); nothing was pushed."""
    NOTHING = "nothing"
    """Nothing to push: green already, not fixed, or greenloop's own commit at the head."""
    REJECTED = "rejected"
    """The push was refused (the branch moved on meanwhile): reported, never forced."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PrResult:
    result: str
    """The loop's result (``success``, ``exhausted`` …), or ``skipped`` (greenloop's own commit)."""
    exit_code: int
    action: Action
    reason: str
    iterations: int = 0
    run_id: str = ""
    pushed: tuple[str, ...] = ()
    """The commits pushed (oldest first)."""
    branch: str = ""
    """Where they went (the head branch, or the fix PR's branch)."""
    pull_url: str = ""
    """The fix PR's page (``--mode pr``)."""
    comment_url: str = ""
    check_url: str = ""
    report_path: str = ""
    """The Markdown report (``report --format md``) written for the run."""


def __getattr__(name: str) -> object:
    if name == "run_pr":  # lazily: the flow imports the loop, the CLI's parser must not
        from greenloop.pr.flow import run_pr

        return run_pr
    raise AttributeError(f"module 'greenloop.pr' has no attribute {name!r}")

"""What ``greenloop pr`` did: the ``Action`` taken on the pull request and the ``PrResult``."""

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

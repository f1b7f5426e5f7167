"""greenloop's one comment on a pull request: a headline for what the run did, then the run's
Markdown report (``greenloop report --format md``), under a hidden marker that finds it again."""

from __future__ import annotations

from typing import Any

from greenloop.loop.history import LoopResult
from greenloop.loop.policy import Result
from greenloop.pr import Action
from greenloop.pr.forge import COMMENT_MARKER, PrContext

MAX_DIFF = 40_000  # the suggested diff's share of a comment (GitHub caps a body at 65,536)
NOT_PUSHED = {
    Result.SUSPICIOUS_PASS: "green, but the run weakened the suite: nothing pushed",
}


NEXT = {
    Action.PUSHED: "Review the pushed commits in this pull request.",
    Action.OPENED: "Review the fix PR's commits, then merge it into this pull request's branch.",
    Action.SUGGESTED: "Nothing was pushed: apply the diff below if it is right.",
}
"""The report's next step once greenloop has acted (the loop's says: review before you push)."""


def pr_view(data: dict[str, Any], action: Action) -> dict[str, Any]:
    """The run's report as a pull request reads it: the next step is the PR's, and the attempt ref
    (in the job's clone only, gone with it) is not offered as a way back."""
    view = {**data}
    if action in NEXT:
        view["recommendation"] = NEXT[action]
    elif data["result"] == "success" and not data["iterations"]:
        view["recommendation"] = "Nothing to fix."
    elif data["result"] != "success":
        first = str(data["recommendation"])
        for local in (" The attempt is kept:", " Moved there:", " The iteration commits stay"):
            first = first.partition(local)[0]  # what the job's clone keeps, gone with it
        view["recommendation"] = f"Nothing was pushed. {first}"
        view["attempt_ref"] = ""
    return view


def comment_body(
    loop: LoopResult,
    context: PrContext,
    action: Action,
    markdown: str,
    *,
    pushed: tuple[str, ...] = (),
    branch: str = "",
    pull_url: str = "",
    detail: str = "",
    diff: str = "",
) -> str:
    head = headline(
        loop, context, action, pushed=pushed, branch=branch, pull_url=pull_url, detail=detail
    )
    parts = [COMMENT_MARKER, head, "", markdown.rstrip()]
    if diff:
        shown = diff if len(diff) <= MAX_DIFF else diff[:MAX_DIFF] + "\n… (cut)\n"
        parts += [
            "",
            "<details><summary>The fix (not pushed)</summary>",
            "",
            _diff_fence(shown),
            "</details>",
        ]
    return "\n".join(parts) + "\n"


def headline(
    loop: LoopResult,
    context: PrContext,
    action: Action,
    *,
    pushed: tuple[str, ...] = (),
    branch: str = "",
    pull_url: str = "",
    detail: str = "",
) -> str:
    at = f"`{loop.initial_sha[:10]}`"
    if loop.result is Result.SUCCESS and loop.iterations == 0:
        return f"**greenloop**: the verifier is green at {at}: nothing to fix, no agent was called."
    commits = ", ".join(f"`{sha[:10]}`" for sha in pushed)
    if action is Action.PUSHED:
        return (
            f"**greenloop** fixed it and pushed {len(pushed)} commit(s) to `{branch}`: {commits}."
        )
    if action is Action.OPENED:
        where = pull_url or f"`{branch}`"
        return f"**greenloop** fixed it in {where} (into `{context.head_ref}`): {len(pushed)} commit(s), {commits}."
    if action is Action.SUGGESTED:
        return f"**greenloop** found a fix in {loop.iterations} iteration(s); nothing pushed (`--mode suggest`): the diff is below."
    if action is Action.REJECTED:
        return f"**greenloop** fixed it, but {detail}; run it again on the new head."
    why = NOT_PUSHED.get(loop.result, f"not fixed ({loop.result.value}): nothing pushed")
    return f"**greenloop** at {at}: {why}."


def _diff_fence(text: str) -> str:
    """A ``diff`` block whose fence is longer than any backtick run inside the diff."""
    import re

    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    return f"{fence}diff\n{text.rstrip()}\n{fence}"

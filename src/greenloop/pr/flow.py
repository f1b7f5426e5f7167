"""``greenloop pr``'s steps: guards -> the loop (its baseline first) -> push / fix PR / suggest ->
one comment kept up to date -> a check with the failures placed on files."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from greenloop import git
from greenloop.agents.base import Agent
from greenloop.config import Config
from greenloop.loop.history import LoopResult
from greenloop.loop.loop import run_loop
from greenloop.loop.policy import Result
from greenloop.loop.preflight import keep_out_set_up
from greenloop.loop.session import Progress
from greenloop.loop.spend import spent_of
from greenloop.pr.branch import Refused, fix_branch, on_head_branch, own_commit, push, refuse_unsafe
from greenloop.pr.budget import (
    EXIT_BUDGET_SPENT,
    PrBudget,
    marker,
    read_budget,
    spent_reason,
    summary,
)
from greenloop.pr.comment import comment_body, pr_view
from greenloop.pr.forge import COMMENT_MARKER, Annotation, Forge, ForgeError, PrContext
from greenloop.pr.result import Action, PrResult
from greenloop.redact import redact
from greenloop.report import render as report

log = logging.getLogger(__name__)
OWN_COMMIT = "nothing to do: the newest commit is greenloop's own"
# a re-run for the annotations would only wait out the same hang or environment again
NOT_ANNOTATED = (Result.TIMEOUT, Result.UNRESOLVED, Result.ENV_FAILURE, Result.INTERRUPTED)


@dataclass(frozen=True, slots=True, kw_only=True)
class Done:
    """What the step after the loop did."""

    action: Action
    pushed: tuple[str, ...] = ()
    branch: str = ""
    pull_url: str = ""
    detail: str = ""
    diff: str = ""
    ok: bool = True


def run_pr(
    repo: Path | str,
    agent: Agent,
    *,
    context: PrContext,
    forge: Forge | None,
    config: Config,
    mode: str = "push",
    command: Sequence[str] = (),
    comment: bool = True,
    progress: Progress = lambda line: None,
    phase: Progress = lambda label: None,
    pr_max_cost: float | None = None,
    pr_max_attempts: int | None = None,
) -> PrResult:
    """The loop on the pull request's head, then what ``mode`` says (the library API)."""
    root = git.get_root(Path(repo).resolve()) or Path(repo).resolve()
    refuse_unsafe(context, mode)
    capped = pr_max_cost is not None or pr_max_attempts is not None
    if capped and (forge is None or not comment):
        raise Refused(
            "--pr-max-cost and --pr-max-attempts keep the PR's spend in greenloop's own comment "
            "on it: they need the comment (no --no-comment) and a forge token"
        )
    if forge is None and (mode == "pr" or comment):
        raise Refused("no forge token: a fix PR and the comment need one (GITHUB_TOKEN)")
    on_head_branch(root, context)
    if own_commit(root):
        return PrResult(result="skipped", exit_code=0, action=Action.NOTHING, reason=OWN_COMMIT)
    if context.failing_check:  # reproduce what failed in CI before anything else (issue 38)
        from dataclasses import replace

        both = "both" if config.stages_from == "detect" else config.stages_from
        config = replace(config, stages_from=both, ci_first=context.failing_check)
        progress(f"pr · the failing check {context.failing_check!r} runs first")
    budget = PrBudget()
    if capped and forge is not None:  # issue 39: what earlier runs on this PR spent
        own = forge.find_comment()
        budget = read_budget(own.body if own else "")
        over = spent_reason(budget, max_cost=pr_max_cost, max_attempts=pr_max_attempts)
        if over:
            return _budget_spent(forge, budget, over, pr_max_cost, pr_max_attempts, progress)
        if pr_max_cost is not None:
            from dataclasses import replace

            left = pr_max_cost - budget.spent_usd
            config = replace(config, max_cost=min(config.max_cost or left, left))
    kept_out = keep_out_set_up(root)
    if kept_out:
        progress(f"pr · the set-up's by-products kept out of git: {', '.join(kept_out)}")
    loop = run_loop(root, agent, config=config, command=command, progress=progress, phase=phase)
    data = report.loop_json(loop)
    done = act(
        root, loop, context, forge, mode, report.render_run_markdown(pr_view(data, Action.OPENED))
    )
    markdown = report.render_run_markdown(pr_view(data, done.action))
    report_path = Path(loop.record_dir) / "report.md"
    report_path.write_text(redact(markdown), encoding="utf-8")
    if done.detail:
        progress(f"pr · {done.detail}")
    annotations = annotate(root, loop, config, command)
    body = comment_body(loop, context, done.action, markdown, pushed=done.pushed,
                        branch=done.branch, pull_url=done.pull_url, detail=done.detail,
                        diff=done.diff)  # fmt: skip
    if capped:
        spent = spent_of([h.usage for h in loop.history]).cost_usd
        budget = PrBudget(
            spent_usd=round(budget.spent_usd + spent, 6),
            attempts=budget.attempts + (1 if loop.iterations else 0),
            last=loop.result.value if loop.iterations else budget.last,
        )
        line = summary(budget, max_cost=pr_max_cost, max_attempts=pr_max_attempts)
        body = f"{body.rstrip()}\n\n{line}\n{marker(budget)}\n"
    if comment and forge and not context.number:
        progress("pr · warning: no pull request number known (the event, GITHUB_REF): no comment")
    comment_url = _comment(forge, body, progress) if comment and forge and context.number else ""
    check_url = _check(forge, loop, done, markdown, annotations, progress) if forge else ""
    exit_code = loop.exit_code if done.ok else 1
    return PrResult(
        result=loop.result.value,
        exit_code=exit_code,
        action=done.action,
        reason=loop.reason if done.ok else done.detail,
        iterations=loop.iterations,
        run_id=loop.run_id,
        pushed=done.pushed,
        branch=done.branch,
        pull_url=done.pull_url,
        comment_url=comment_url,
        check_url=check_url,
        report_path=str(report_path),
    )


def act(
    root: Path, loop: LoopResult, context: PrContext, forge: Forge | None, mode: str, markdown: str
) -> Done:
    """Push, open a fix PR or suggest: only a trusted success with commits of its own."""
    if loop.result is not Result.SUCCESS or loop.final_sha == loop.initial_sha:
        return Done(action=Action.NOTHING)
    if mode == "suggest":
        return Done(
            action=Action.SUGGESTED, diff=git.diff_commits(root, loop.initial_sha, loop.final_sha)
        )
    branch = context.head_ref if mode == "push" else fix_branch(context, loop.run_id)
    sent = push(
        root,
        sha=loop.final_sha,
        branch=branch,
        base_sha=loop.initial_sha,
        protected=context.base_ref,
    )
    if not sent.ok:
        detail = f"the push to {branch} was refused, not forced: {sent.detail}"
        return Done(action=Action.REJECTED, branch=branch, detail=detail, ok=False)
    if mode == "push":
        detail = f"pushed {len(sent.commits)} commit(s) to {branch}"
        return Done(action=Action.PUSHED, pushed=sent.commits, branch=branch, detail=detail)
    assert forge is not None  # run_pr refuses --mode pr without one
    title = f"greenloop: make #{context.number} green" if context.number else "greenloop: a fix"
    which = f"#{context.number}" if context.number else f"`{context.head_ref}`"
    body = (
        f"**greenloop** made {which} green: {len(sent.commits)} commit(s) on top of "
        f"`{context.head_ref}`; merging this pull request puts them there.\n\n{markdown}"
    )
    try:
        pull = forge.open_pull(head=branch, base=context.head_ref, title=title, body=redact(body))
    except ForgeError as exc:
        detail = f"pushed {branch}, but the fix PR could not be opened: {exc}"
        return Done(
            action=Action.REJECTED, pushed=sent.commits, branch=branch, detail=detail, ok=False
        )
    detail = f"opened {pull.url or branch} into {context.head_ref} ({len(sent.commits)} commit(s))"
    return Done(
        action=Action.OPENED, pushed=sent.commits, branch=branch, pull_url=pull.url, detail=detail
    )


def annotate(
    root: Path, loop: LoopResult, config: Config, command: Sequence[str]
) -> tuple[Annotation, ...]:
    """What still fails on the head, placed on repository files: the verifier run once more on the
    reverted tree (only after a loop that did not fix it, and not after a hang)."""
    if loop.result is Result.SUCCESS or loop.result in NOT_ANNOTATED:
        return ()
    if git.rev_parse(root, "HEAD") != loop.initial_sha or git.status_paths(root, untracked="no"):
        return ()
    from greenloop.loop.checking import check

    result, digest = check(root, command, config=config)
    failing = result.failing
    found = []
    for i, f in enumerate(failing.parsed.failures[:50] if failing else ()):
        where = digest.locations[i] if i < len(digest.locations) else None
        if where is None or not where[1]:
            continue  # no repository line to point at (a failure inside the standard library)
        message = ": ".join(p for p in (f.error_type, f.message) if p) or f.id
        level = "warning" if f.severity == "warning" else "failure"
        found.append(
            Annotation(
                path=where[0],
                line=where[1],
                message=redact(message),
                title=redact(f.id),
                level=level,
            )
        )
    return tuple(found)


def _budget_spent(
    forge: Forge,
    budget: PrBudget,
    over: str,
    max_cost: float | None,
    max_attempts: int | None,
    progress: Progress,
) -> PrResult:
    """No agent: the comment says what was spent over how many runs, and hands the PR over."""
    line = summary(budget, max_cost=max_cost, max_attempts=max_attempts)
    reason = f"this pull request's budget is spent: {over}; no agent was called"
    body = (
        f"{COMMENT_MARKER}\n## ⛔ greenloop: budget spent\n\n{reason}. {line}\n\n"
        "A human takes it from here (raise --pr-max-cost or --pr-max-attempts to go on).\n"
        f"{marker(budget)}\n"
    )
    progress(f"pr · {reason}")
    url = _comment(forge, body, progress)
    return PrResult(
        result="budget_spent",
        exit_code=EXIT_BUDGET_SPENT,
        action=Action.NOTHING,
        reason=reason,
        comment_url=url,
    )


def _comment(forge: Forge, body: str, progress: Progress) -> str:
    try:
        made = forge.upsert_comment(redact(body))
    except ForgeError as exc:
        progress(f"pr · warning: the comment was not written: {exc}")
        return ""
    for other in getattr(forge, "ignored", ()):  # issue 39: a marker proves no authorship
        progress(f"pr · ignored {other}: it carries greenloop's marker but is not greenloop's own")
    return made.url


def _check(
    forge: Forge,
    loop: LoopResult,
    done: Done,
    markdown: str,
    annotations: Sequence[Annotation],
    progress: Progress,
) -> str:
    sha = loop.final_sha if done.action in (Action.PUSHED, Action.OPENED) else loop.initial_sha
    conclusion = "success" if loop.result is Result.SUCCESS else "failure"
    title = f"greenloop: {loop.result.value}: {loop.reason}"[:250]
    try:
        return forge.publish_check(
            sha=sha, conclusion=conclusion, title=redact(title), summary=redact(markdown),
            annotations=annotations,
        )  # fmt: skip
    except ForgeError as exc:
        progress(f"pr · warning: the check run was not published: {exc}")
        return ""

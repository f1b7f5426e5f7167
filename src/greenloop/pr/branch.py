"""The pull request's branch in the checkout: on it, whose commit is newest, and a plain push.

Never ``--force`` and never a ``+`` refspec: a push the remote refuses as non-fast-forward (the
branch moved on while the loop ran) is reported, not retried.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from greenloop import git
from greenloop.errors import FatalError
from greenloop.pr.forge import PrContext

OWN_SUBJECT = "agent[iter "
OWN_TRAILER = "Greenloop-Run:"
REMOTE = "origin"


class Refused(FatalError):
    """A guard stopped the run before the loop: one clear line, exit 2."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Pushed:
    ok: bool
    branch: str
    commits: tuple[str, ...] = ()
    detail: str = ""


def refuse_unsafe(context: PrContext, mode: str) -> None:
    """The guards that hold before anything runs."""
    if not context.head_ref:
        raise Refused("the pull request's head branch is not known (GITHUB_HEAD_REF, the event)")
    if not context.base_ref:
        raise Refused("the pull request's base branch is not known: pass --base REF")
    if context.head_ref == context.base_ref:
        raise Refused(
            f"the pull request's head branch is its base branch ({context.base_ref}): "
            "greenloop never pushes to the base branch"
        )
    if context.fork and mode in ("push", "pr"):
        where = context.head_repo or "a deleted fork"
        raise Refused(
            f"the pull request's head is in the fork {where}, which this job's token cannot push "
            f"to: nothing run; use --mode suggest to comment the fix instead"
        )


def own_commit(root: Path) -> bool:
    """The newest commit is one greenloop made (an iteration commit, or one carrying its trailer):
    a CI run on greenloop's own push must not start another loop."""
    message = git.git(root, "log", "-1", "--format=%B", "HEAD").stdout
    trailers = (line.strip() for line in message.splitlines())
    return message.startswith(OWN_SUBJECT) or any(t.startswith(OWN_TRAILER) for t in trailers)


def on_head_branch(root: Path, context: PrContext) -> None:
    """Be on a local branch named as the PR's head: a detached checkout of the head commit gets one;
    any other commit (GitHub's default merge commit) is refused, since its commits are not the PR's."""
    branch = git.current_branch(root)
    if branch == context.head_ref:
        return
    head = git.rev_parse(root, "HEAD") or ""
    if branch is None and context.head_sha and head == context.head_sha:
        git.checkout_here(root, context.head_ref)
        return
    where = f"branch {branch}" if branch else f"a detached {head[:10]}"
    wanted = f" ({context.head_sha[:10]})" if context.head_sha else ""
    raise Refused(
        f"the checkout is {where}, not the pull request's head {context.head_ref}{wanted}: check "
        "out the head (actions/checkout with ref: ${{ github.head_ref }})"
    )


def push(root: Path, *, sha: str, branch: str, base_sha: str, protected: str) -> Pushed:
    """``git push origin <sha>:refs/heads/<branch>``: plain, so a moved branch is refused."""
    if branch == protected:
        raise Refused(f"refusing to push to the base branch {protected}")
    commits = git.rev_list(root, f"{base_sha}..{sha}")
    result = git.git(
        root,
        *git.NO_HOOKS,
        "push",
        "--porcelain",
        REMOTE,
        f"{sha}:refs/heads/{branch}",
        check=False,
    )
    if result.exit_code == 0:
        return Pushed(ok=True, branch=branch, commits=commits)
    return Pushed(
        ok=False, branch=branch, commits=commits, detail=_refusal(result.stdout, result.stderr)
    )


def _refusal(stdout: str, stderr: str) -> str:
    """The remote's reason: the porcelain ``!`` line's (``[rejected] (fetch first)``), else git's
    ``fatal:``/``error:`` line."""
    for line in stdout.splitlines():
        if line.startswith("!\t"):
            return line.split("\t")[-1].strip()
    fatal = [line for line in stderr.splitlines() if line.startswith(("fatal:", "error:"))]
    return fatal[0] if fatal else "git push failed"


def fix_branch(context: PrContext, run_id: str) -> str:
    """The branch a fix PR comes from: one per run, never the head's or the base's."""
    return f"greenloop/fix-{context.number or context.head_ref}-{run_id}"

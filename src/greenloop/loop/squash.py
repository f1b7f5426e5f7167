"""Squash: fold a successful run's iterations into one commit on the commit the run started from.

The folded commit keeps each iteration's subject and body; the unsquashed head stays reachable
under ``refs/greenloop/<run_id>-pre-squash``.
"""

from __future__ import annotations

from greenloop import git
from greenloop.loop.checkpoints import (
    attempt_ref,
    commit_as_user,
    critical,
    head_sha,
    keep_ref,
    save_leftovers,
)
from greenloop.loop.preflight import RepoState


def squash(state: RepoState, *, message: str, run_id: str) -> str:
    """Fold initial_sha..HEAD into one commit; the pre-squash head kept under ``<ref>-pre-squash``."""
    if "Greenloop-Run:" not in message:
        message = f"{message.rstrip()}\n\nGreenloop-Run: {run_id}\n"
    with critical():
        save_leftovers(state.root, f"greenloop: uncommitted work of run {run_id}")
        head = head_sha(state.root)
        if head == state.initial_sha:
            return head
        keep_ref(state.root, attempt_ref(run_id, "pre-squash"), head)
        message = _with_iterations(message, git.log_messages(state.root, state.initial_sha, head))
        git.reset_soft(state.root, state.initial_sha)
        if git.staged_paths(state.root):  # else the iterations cancelled out: nothing to fold
            commit_as_user(state.root, message)
    return head_sha(state.root)


def _with_iterations(message: str, messages: tuple[str, ...]) -> str:
    """The squashed commit keeps each folded commit's subject and body, trailers aside."""
    head, _, trailer = message.rpartition("\n\nGreenloop-Run:")
    kept = [
        "\n".join(line for line in m.strip().splitlines() if not line.startswith("Greenloop-Run:"))
        for m in messages
    ]
    body = "\n\n".join(k.strip() for k in kept if k.strip())
    return f"{head}\n\n{body}\n\nGreenloop-Run:{trailer}"

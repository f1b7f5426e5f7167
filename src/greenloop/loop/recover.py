"""``greenloop recover``: finish what a killed run left behind, keeping every byte of its work.

Stop the dead run's surviving children, clear git lock files no process holds, commit the
leftovers into the attempt ref, put the branch back where the run found it, remove the lock.
"""

from __future__ import annotations

import argparse
import contextlib
from dataclasses import dataclass
from pathlib import Path

from greenloop import git
from greenloop.errors import FatalError
from greenloop.loop import record
from greenloop.loop.checkpoints import attempt_ref, critical
from greenloop.loop.preflight import ABORT_HINT, RepoState, operation_in_progress
from greenloop.loop.rollback import bring_back_command, move_branch, save_attempt
from greenloop.loop.runlock import lock_is_live, read_lock, stop_escapes, stop_survivors
from greenloop.processes import process_table
from greenloop.processes.orphans import Escaped, describe


@dataclass(frozen=True, slots=True, kw_only=True)
class RecoverResult:
    run_id: str
    branch: str
    initial_sha: str
    attempt_ref: str
    saved_uncommitted: bool
    """Whether uncommitted work was found and committed into the attempt before restoring."""
    extra_refs: tuple[str, ...] = ()
    """Further refs kept (a branch tip the agent left behind, an already-used attempt ref)."""
    stopped_groups: tuple[int, ...] = ()
    """Process groups of the dead run (its agent, its verifier) that were still running."""
    cleared_locks: tuple[str, ...] = ()
    """git lock files the killed run left behind, held by no live process, removed."""
    stopped_escaped: tuple[Escaped, ...] = ()
    """Processes the dead run's commands started outside their groups (a daemon), stopped."""


def recover(cwd: Path) -> RecoverResult:
    """Finish a killed run: commit its leftovers, keep its attempt, restore the branch, unlock."""
    root = git.get_root(cwd)
    if root is None:
        raise FatalError(f"{cwd} is not inside a git work tree")
    common = git.common_dir(root)
    lock = read_lock(common)
    if lock is None:
        raise FatalError("nothing to recover: no unfinished greenloop run in this repository")
    if lock_is_live(lock):
        raise FatalError(f"run {lock.run_id} is still in progress (pid {lock.pid}); stop it first")
    stopped = stop_survivors(common)  # before touching the tree: nothing may edit it behind us
    escaped = stop_escapes(lock)
    if not lock.initial_sha:
        lock.path.unlink()  # torn lock: the run died before doing anything
        return RecoverResult(
            run_id="?", branch="", initial_sha="", attempt_ref="", saved_uncommitted=False
        )
    if lock.root and Path(lock.root).is_dir():
        root = Path(lock.root)  # the run's own worktree
    git_dir = git.git_dir(root)
    cleared = clear_stale_git_locks(git_dir, common)
    operation = operation_in_progress(git_dir)
    if operation:
        raise FatalError(f"{operation} is in progress; finish it first ({ABORT_HINT[operation]})")
    state = RepoState(
        root=root,
        git_dir=git_dir,
        common_dir=common,
        branch=lock.branch,
        initial_sha=lock.initial_sha,
        ignored=tuple(lock.ignored),
    )
    message = (
        f"greenloop: recovered uncommitted work of run {lock.run_id}\n\n"
        f"Greenloop-Run: {lock.run_id}\n"
    )
    with critical():
        saved, kept = save_attempt(state, attempt_ref(lock.run_id), message)
        move_branch(state, lock.initial_sha)
        lock.path.unlink()
    result = RecoverResult(
        run_id=lock.run_id,
        branch=lock.branch,
        initial_sha=lock.initial_sha,
        attempt_ref=kept[0],
        saved_uncommitted=saved,
        extra_refs=kept[1:],
        stopped_groups=stopped,
        stopped_escaped=escaped,
        cleared_locks=cleared,
    )
    note_recovery(root, record.runs_dir(common) / lock.run_id, result)
    return result


def note_recovery(root: Path, run_dir: Path, result: RecoverResult) -> None:
    """The run's report says it was killed and recovered, and where its work is: ``report
    last`` read "in progress … nothing was lost" with no attempt ref (issue 26)."""
    if not run_dir.is_dir():
        return  # a lock with no record: no report to correct
    report = record.read_json(run_dir / record.REPORT)
    if report is not None and report.get("reason") != "in progress":
        return  # it finished (its report is final) and died before it removed the lock
    events = record.read_events(run_dir)
    start = next((e for e in events if e.get("kind") == "start"), {})
    report = report or _empty_report(result, start, run_dir)
    ref = result.attempt_ref
    files = git.diff_names(root, result.initial_sha, ref)
    moved = f"{len(files)} changed file(s)" + (f": {', '.join(files[:8])}" if files else "")
    more = f" and {len(files) - 8} more" if len(files) > 8 else ""
    report |= {
        "reason": f"killed {_where_killed(events)} (kill -9, a crash or a power loss: it never "
        f"finished); greenloop recover restored {result.branch} to {result.initial_sha[:12]}",
        "final_sha": result.initial_sha,  # where the branch is now; the work is under the ref
        "attempt_ref": ref,
        "recommendation": f"The work is kept under {ref} ({moved}{more}): git log {ref}. "
        f"To bring it back into the tree: {bring_back_command(result.initial_sha, ref)}"
        if files
        else f"It had changed no file: nothing to bring back (git log {ref}). Run again when ready.",
        "recovered": {
            "attempt_ref": ref,
            "also_kept": list(result.extra_refs),
            "saved_uncommitted": result.saved_uncommitted,
        },
    }
    rec = record.RunRecord(path=run_dir, run_id=result.run_id)
    rec.write_report(report)
    rec.event("recovered", attempt_ref=ref, also_kept=list(result.extra_refs))


def _where_killed(events: list[dict[str, object]]) -> str:
    """From the last event the run wrote: which step the kill stopped."""
    last = events[-1] if events else {}
    n, kind = last.get("iteration"), last.get("kind")
    if kind == "agent_start":
        return f"during iteration {n}'s agent call"
    if kind in ("agent_end", "commit", "outside_edits", "rollback"):
        return f"while iteration {n} was verified"
    if kind == "iteration":
        return "after the baseline" if n == 0 else f"after iteration {n}"
    return "during the baseline" if kind == "start" else "before it recorded a step"


def _empty_report(
    result: RecoverResult, start: dict[str, object], run_dir: Path
) -> dict[str, object]:
    """A run killed before it wrote a report: enough of one for ``report`` and ``runs``."""
    stages = start.get("stages")
    max_iters = start.get("max_iters")
    return {
        "run_id": result.run_id,
        "result": "interrupted",
        "exit_code": 130,
        "iterations": 0,
        "max_iters": max_iters if isinstance(max_iters, int) else 0,
        "branch": result.branch,
        "initial_sha": result.initial_sha,
        "duration_s": 0.0,
        "agent": str(start.get("agent") or ""),
        "verifier": list(stages) if isinstance(stages, list) else [],
        "history": [],
        "remaining_failures": [],
        "suspicious": [],
        "warnings": [],
        "flaky": [],
        "last_digest": "",
        "record_dir": str(run_dir),
    }


def clear_stale_git_locks(git_dir: Path, common_dir: Path) -> tuple[str, ...]:
    """Remove git's lock files (``index.lock``, ``refs/…/x.lock``) that no live process holds.

    A run killed while git was inside ``reset --hard`` or ``update-ref`` leaves them, and every
    later git command then refuses to run.
    """
    candidates = [git_dir / "index.lock", git_dir / "HEAD.lock", common_dir / "packed-refs.lock"]
    for base in {git_dir / "refs", common_dir / "refs"}:
        candidates += sorted(base.rglob("*.lock")) if base.is_dir() else []
    stale = [p for p in dict.fromkeys(candidates) if p.is_file()]
    if not stale:
        return ()
    held = process_table.held_open(str(p.resolve()) for p in stale)
    cleared = []
    for path in stale:
        if str(path.resolve()) not in held:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            cleared.append(str(path))
    return tuple(cleared)


def main_recover(args: argparse.Namespace) -> int:
    result = recover(Path(args.repo).resolve())
    if not result.attempt_ref:
        print("greenloop: removed the lock of a run killed as it started; nothing else to restore")
        return 0
    lines = [f"greenloop: recovered run {result.run_id}"]
    if result.stopped_groups:
        pids = ", ".join(map(str, result.stopped_groups))
        lines.append(f"  stopped its processes still running (process groups {pids})")
    if result.stopped_escaped:
        lines.append(f"  {describe(result.stopped_escaped)}")
    lines += [f"  removed a stale git lock no process held: {p}" for p in result.cleared_locks]
    if result.saved_uncommitted:
        lines.append("  its uncommitted work was committed into the attempt first")
    lines += [
        f"  branch {result.branch} restored to {result.initial_sha[:12]}",
        f"  the attempt is kept: git log {result.attempt_ref}",
        f"  its changes:         git diff {result.initial_sha[:12]} {result.attempt_ref}",
        f"  to bring them back:  {bring_back_command(result.initial_sha, result.attempt_ref)}",
        *(f"  also kept:           git log {ref}" for ref in result.extra_refs),
    ]
    print("\n".join(lines))
    return 0

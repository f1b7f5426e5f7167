"""The checks a batch makes before it starts anything: every one that needs no clone, in one pass.

A batch that starts and then fails task after task on a missing ``--agent`` or a mistyped path
spends minutes to say what one look at TASKS.jsonl says at once; every problem of every line is
listed together (exit 2) and nothing starts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from greenloop import git
from greenloop.batch.tasks import Task, collect_tasks, raise_problems
from greenloop.errors import FatalError


def load_checked_tasks(
    path: Path, *, agent: str | None, environ: Mapping[str, str] = os.environ
) -> tuple[Task, ...]:
    """Read TASKS.jsonl and check it whole; raise FatalError listing every problem (exit 2)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FatalError(f"cannot read {path}: {exc}") from exc
    tasks, problems = collect_tasks(text, base=path.resolve().parent, name=path.name)
    problems += check_tasks(tasks, agent=agent, name=path.name, environ=environ)
    raise_problems(problems)
    return tasks


def check_tasks(
    tasks: Sequence[Task],
    *,
    agent: str | None,
    name: str = "TASKS.jsonl",
    environ: Mapping[str, str] = os.environ,
) -> list[str]:
    """One line per problem: a task without an agent, an agent that can't start, a missing repo or ref."""
    agents: dict[str, str | None] = {}
    problems: list[str] = []
    for task in tasks:
        where = f"{name}:{task.line}: task {task.id!r}"
        spec = task.agent or agent
        if not spec:
            problems.append(f"{where} has no agent: pass --agent, or give the task an 'agent' key")
        else:
            if spec not in agents:
                agents[spec] = _agent_problem(spec, environ)
            if agents[spec]:
                problems.append(f"{where}: agent {spec!r}: {agents[spec]}")
        if task.is_local:
            problems += [f"{where}: {p}" for p in _repo_problems(task)]
    return problems


def _agent_problem(spec: str, environ: Mapping[str, str]) -> str | None:
    """What stops this agent from being made (a preset's CLI not on PATH, a missing script …)."""
    from greenloop.agents.factory import make_agent
    from greenloop.config import Config

    try:
        make_agent(spec, Config(), environ)
    except FatalError as exc:
        return str(exc).splitlines()[0]
    return None


def _repo_problems(task: Task) -> list[str]:
    repo = Path(task.repo)
    if not repo.exists():
        return [f"repo {task.repo} does not exist"]
    if repo.is_file():  # a git bundle clones like a repository
        return []
    if not _is_repo(repo):
        return [f"repo {task.repo} is not a git repository"]
    if task.ref and git.rev_parse(repo, f"{task.ref}^{{commit}}") is None:
        return [f"ref {task.ref!r} not found in {task.repo} (a branch, tag or commit of it)"]
    return []


def _is_repo(repo: Path) -> bool:
    """``repo`` is itself a repository's top (or a bare one), not a folder inside another one."""
    top = git.git(repo, "rev-parse", "--show-toplevel", check=False)
    if top.exit_code != 0:
        bare = git.git(repo, "rev-parse", "--is-bare-repository", check=False)
        return bare.stdout.strip() == "true"
    return Path(top.stdout.strip()).resolve() == repo.resolve()

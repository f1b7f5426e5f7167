"""``run_bench``: clean green repository -> mutants -> seeded repositories -> batch -> bench.json."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from greenloop import git
from greenloop.bench import score, seed
from greenloop.bench.mutate import Mutant
from greenloop.classify import Verdict
from greenloop.config import load_config
from greenloop.errors import FatalError

BENCH = "bench.json"


def run_bench(
    repo: Path | str,
    *,
    agents: Sequence[str],
    out: Path | str,
    mutants: int = 10,
    seed_value: int = 0,
    command: Sequence[str] = (),
    max_failing: int = 5,
    executor: str = "local",
    workers: int | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    from greenloop.batch.run import run_batch
    from greenloop.checking import check, resolve_cascade

    root = Path(repo).resolve()
    out = Path(out).resolve()
    if git.status_paths(root):
        raise FatalError("the repository has uncommitted changes: bench starts from a clean HEAD")
    config = load_config(root, {k: v for k, v in (overrides or {}).items() if k == "timeout"})
    clean = seed.export_head(root, out / "clean") if not (out / "clean").exists() else out / "clean"
    baseline, _ = check(clean, command, config=config)
    if baseline.verdict is not Verdict.GREEN:
        raise FatalError(
            f"the verifier must be green at HEAD to seed bugs (it is {baseline.verdict.value})"
        )
    files = git.git(root, "ls-files", "*.py").stdout.split()
    exclude = [s.display for s in resolve_cascade(clean, config, command).stages]  # its files
    candidates = seed.candidate_mutants(clean, files, exclude)
    chosen = seed.select(
        clean, candidates, n=mutants, seed=seed_value, command=command, config=config,
        max_failing=max_failing,
    )  # fmt: skip
    tasks = _write_tasks(out, clean, chosen.kept, agents, command)
    batch = run_batch(tasks, out=out / "batch", executor=executor, workers=workers,
                      overrides=overrides)  # fmt: skip
    data = _report(chosen, agents, [dict(r) for r in batch.summary["tasks"]], seed_value)
    (out / BENCH).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return data


def _write_tasks(
    out: Path, clean: Path, kept: Sequence[Mutant], agents: Sequence[str], command: Sequence[str]
) -> Path:
    lines = []
    for mutant in kept:
        repo = out / "mutants" / mutant.id
        if not repo.exists():
            seed.seed_repository(clean, mutant, repo)
        seed.write_answer(out / "answers", mutant)
        for i, agent in enumerate(agents):
            task: dict[str, Any] = {"id": f"{mutant.id}.a{i}", "repo": str(repo), "agent": agent}
            if command:
                task["verifier"] = list(command)
            lines.append(json.dumps(task))
    path = out / "tasks.jsonl"
    tmp = path.with_suffix(".tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def _report(
    chosen: seed.Selection, agents: Sequence[str], rows: list[dict[str, Any]], seed_value: int
) -> dict[str, Any]:
    by_agent: dict[int, dict[str, dict[str, Any]]] = {i: {} for i in range(len(agents))}
    for row in rows:
        mutant, _, index = str(row["id"]).rpartition(".a")
        by_agent[int(index)][mutant] = row
    pairs = [
        {"first": agents[i], "second": agents[j], **score.paired(by_agent[i], by_agent[j])}
        for i in range(len(agents))
        for j in range(i + 1, len(agents))
    ]
    return {
        "seed": seed_value,
        "candidates": chosen.candidates,
        "tried": chosen.tried,
        "mutants": [
            {"id": m.id, "path": m.path, "line": m.line, "kind": m.kind} for m in chosen.kept
        ],
        "agents": [
            {"agent": a, "feedback": "digest", **score.agent_score(list(by_agent[i].values()))}
            for i, a in enumerate(agents)
        ],
        "pairs": pairs,
    }

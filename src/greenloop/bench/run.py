"""``run_bench``: clean green repository -> mutants -> seeded repositories -> batch -> bench.json."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from greenloop import git
from greenloop.bench import score, seed
from greenloop.bench.mutate import Mutant
from greenloop.bench.names import agent_names
from greenloop.config import load_config
from greenloop.errors import FatalError
from greenloop.verify.classify import Verdict

BENCH = "bench.json"
ARMS = {"digest": ("digest",), "raw": ("raw",), "both": ("digest", "raw")}
ARM_READS = {
    "digest": "each agent reads greenloop's digest",
    "raw": "each agent reads the verifier's raw output",
}


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
    feedback: str = "digest",
    setup: str | None = None,
) -> dict[str, Any]:
    """Seed ``mutants`` bugs, run every agent on each under each feedback arm; write bench.json."""
    from greenloop.batch.run import run_batch
    from greenloop.loop.checking import check, resolve_cascade

    root = Path(repo).resolve()
    out = Path(out).resolve()
    if git.status_paths(root):
        raise FatalError("the repository has uncommitted changes: bench starts from a clean HEAD")
    config = load_config(root, {k: v for k, v in (overrides or {}).items() if k == "timeout"})
    clean = seed.prepare_clean(root, out / "clean", setup)
    baseline, _ = check(clean, command, config=config)
    if baseline.verdict is not Verdict.GREEN:
        raise FatalError(
            f"the verifier must be green at HEAD to seed bugs (it is {baseline.verdict.value})"
        )
    files = git.tracked_paths(root)
    exclude = [s.display for s in resolve_cascade(clean, config, command).stages]  # its files
    candidates = seed.candidate_mutants(clean, files, exclude)
    chosen = seed.select(
        clean, candidates, n=mutants, seed=seed_value, command=command, config=config,
        max_failing=max_failing,
    )  # fmt: skip
    tasks = _write_tasks(out, root, chosen.kept, agents, command, setup)
    rows: dict[str, list[dict[str, Any]]] = {}
    names = ", ".join(f"a{i} = {n}" for i, n in enumerate(agent_names(agents)))
    for arm in ARMS[feedback]:  # identical batches but for what the agent reads
        print(
            f"greenloop bench: arm {arm!r} ({ARM_READS[arm]}): {len(chosen.kept)} mutants x "
            f"{len(agents)} agents ({names})",
            file=sys.stderr,
            flush=True,
        )
        batch = run_batch(
            tasks, out=out / f"batch-{arm}", executor=executor, workers=workers,
            overrides={**(overrides or {}), "feedback": arm},
        )  # fmt: skip
        rows[arm] = [dict(r) for r in batch.summary["tasks"]]
    data = _report(chosen, agents, rows, seed_value)
    (out / BENCH).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return data


def _write_tasks(
    out: Path,
    root: Path,
    kept: Sequence[Mutant],
    agents: Sequence[str],
    command: Sequence[str],
    setup: str | None,
) -> Path:
    lines = []
    for mutant in kept:
        repo = out / "mutants" / mutant.id
        if not repo.exists():
            seed.seed_repository(root, mutant, repo)
        seed.write_answer(out / "answers", mutant)
        for i, agent in enumerate(agents):
            task: dict[str, Any] = {"id": f"{mutant.id}.a{i}", "repo": str(repo), "agent": agent}
            if command:
                task["verifier"] = list(command)
            if setup:
                task["setup"] = setup  # each workspace installs what the clean tree had
            lines.append(json.dumps(task))
    path = out / "tasks.jsonl"
    tmp = path.with_suffix(".tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def _report(
    chosen: seed.Selection,
    agents: Sequence[str],
    rows: Mapping[str, list[dict[str, Any]]],
    seed_value: int,
) -> dict[str, Any]:
    arms = {
        (agent, arm): _by_mutant(arm_rows, i)
        for arm, arm_rows in rows.items()
        for i, agent in enumerate(agents)
    }
    keys = list(arms)
    name = dict(zip(agents, agent_names(agents), strict=True))
    pairs = [
        {
            "first": list(a),
            "second": list(b),
            "names": [name[a[0]], name[b[0]]],
            **score.paired(arms[a], arms[b]),
        }
        for n, a in enumerate(keys)
        for b in keys[n + 1 :]
    ]
    return {
        "seed": seed_value,
        "candidates": chosen.candidates,
        "tried": chosen.tried,
        "mutants": [
            {"id": m.id, "path": m.path, "line": m.line, "kind": m.kind} for m in chosen.kept
        ],
        "agents": [
            {
                "agent": agent,
                "name": name[agent],
                "feedback": arm,
                **score.agent_score(list(found.values())),
            }
            for (agent, arm), found in arms.items()
        ],
        "pairs": pairs,
    }


def _by_mutant(rows: Sequence[Mapping[str, Any]], index: int) -> dict[str, Mapping[str, Any]]:
    found = {}
    for row in rows:
        mutant, _, agent_index = str(row["id"]).rpartition(".a")
        if int(agent_index) == index:
            found[mutant] = row
    return found

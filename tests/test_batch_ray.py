"""The Ray executor against a real local Ray cluster (one per module: start-up takes seconds)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray

from batch_fixtures import EXPECTED, FIX, fingerprint, make_calc_repo, make_project, write_tasks
from greenloop.batch.run import BatchResult, run_batch
from greenloop.bench.run import run_bench


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    # "local": a new cluster of our own, never one that `ray start` left running on this machine
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        logging_level="WARNING",
    )
    yield
    ray.shutdown()


def test_batch_ray_gives_the_same_results_as_local_on_the_same_tasks(
    cluster: None, tmp_path: Path
) -> None:
    marker = tmp_path / "slow-started"
    marker.touch()  # the slow task does not wait here
    tasks, sources = write_tasks(tmp_path, marker)
    before = [fingerprint(s) for s in sources]
    out = tmp_path / "out"

    result = run_batch(
        tasks, out=out, agent=FIX, executor="ray", max_parallel_agents=1,
        overrides={"max_iters": 3},
    )  # fmt: skip

    assert {str(r["id"]): r["result"] for r in result.ran} == EXPECTED
    assert {r["executor"] for r in result.ran} == {"ray"}
    assert result.exit_code == 1
    assert all(float(r["agent_slot_wait_s"]) >= 0 for r in result.ran if r["iterations"])
    for task_id in ("fix-a", "fix-b-url", "slow-c"):  # shipped back with the result
        report = json.loads((out / "records" / task_id / "report.json").read_text())
        assert report["result"] == "success"
    assert (out / "records" / "env-a" / "setup.log").read_text().strip() == "no compiler"
    assert [fingerprint(s) for s in sources] == before


def test_batch_ray_retries_a_task_whose_worker_was_killed_mid_task(
    cluster: None, tmp_path: Path
) -> None:
    repo = make_calc_repo(tmp_path / "r")
    pids = tmp_path / "pids"
    agent = f"[ -e {pids} ] || {{ echo $PPID $$ > {pids}.tmp; mv {pids}.tmp {pids}; sleep 120; }}; {FIX}"
    tasks = tmp_path / "tasks.jsonl"
    line = {"id": "victim", "repo": str(repo), "verifier": "python3 -B test_calc.py"}
    tasks.write_text(json.dumps({**line, "agent": agent}) + "\n")
    done: list[BatchResult] = []
    runner = threading.Thread(
        target=lambda: done.append(run_batch(tasks, out=tmp_path / "out", executor="ray"))
    )
    runner.start()
    deadline = time.monotonic() + 120
    while not pids.exists():
        assert time.monotonic() < deadline, "the agent never started"
        time.sleep(0.1)
    worker, agent_group = (int(p) for p in pids.read_text().split())
    os.kill(worker, signal.SIGKILL)  # the Ray worker process dies mid-task
    with contextlib.suppress(ProcessLookupError):
        os.killpg(agent_group, signal.SIGKILL)  # its orphaned agent
    runner.join(timeout=180)

    assert [(r["id"], r["result"], r["attempt"]) for r in done[0].ran] == [("victim", "success", 2)]


def test_bench_runs_its_mutants_through_the_ray_executor(cluster: None, tmp_path: Path) -> None:
    steps = tmp_path / "noop.json"
    steps.write_text("[]")
    data = run_bench(
        make_project(tmp_path), agents=[f"scripted:{steps}"], out=tmp_path / "bench", mutants=10,
        command=(sys.executable, "-B", "test_lib.py"), executor="ray", overrides={"max_iters": 1},
    )  # fmt: skip
    assert len(data["mutants"]) == 10
    (agent,) = data["agents"]
    assert (agent["solved"], agent["total"]) == (0, 10)
    rows = (tmp_path / "bench" / "batch-digest" / "results.jsonl").read_text().splitlines()
    assert {json.loads(r)["executor"] for r in rows} == {"ray"}

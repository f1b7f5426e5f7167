"""The Ray executor against real Ray clusters: one this process starts (one per module: start-up
takes seconds), and one that ``ray start`` runs, which ``greenloop batch --ray-address`` joins."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
import ray

from batch_fixtures import (
    EXPECTED,
    FIX,
    VERIFY,
    fingerprint,
    make_calc_repo,
    make_project,
    watch_phases,
    write_tasks,
)
from greenloop.batch.run import BatchResult, run_batch
from greenloop.bench.run import run_bench
from limits import hang

START_S = hang(120)
# set only in the existing cluster's environment: what its workers see, a driver's own workers do not
CLUSTER_MARK = "GREENLOOP_TEST_CLUSTER"


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


@dataclass(frozen=True, slots=True, kw_only=True)
class Existing:
    address: str
    token: str
    head: subprocess.Popen[bytes]


@pytest.fixture
def existing_cluster(tmp_path: Path) -> Iterator[Existing]:
    """A user's cluster: ``ray start --head`` with token authentication (Ray 2.60 turns it on for
    ``ray start`` whenever ~/.ray/auth_token exists, and ``ray.init()`` writes that file)."""
    temp_dir = tempfile.mkdtemp(prefix="glray-", dir="/tmp")  # short: Ray's socket paths must fit
    address, token = f"127.0.0.1:{_free_port()}", secrets.token_hex(32)
    log = tmp_path / "ray-start.log"
    head = _ray_start(address, token, temp_dir, log)
    try:
        deadline = time.monotonic() + START_S
        while "Ray runtime started" not in log.read_text(errors="replace"):
            assert head.poll() is None, f"ray start failed:\n{log.read_text(errors='replace')}"
            assert time.monotonic() < deadline, "the Ray cluster never started"
            time.sleep(0.2)
        yield Existing(address=address, token=token, head=head)
    finally:
        _stop(head)
        shutil.rmtree(temp_dir, ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ray_start(address: str, token: str, temp_dir: str, log: Path) -> subprocess.Popen[bytes]:
    host, port = address.split(":")
    argv = [
        sys.executable, "-c", "from ray.scripts.scripts import main; main()", "start", "--head",
        f"--port={port}", f"--node-ip-address={host}", "--num-cpus=2", "--include-dashboard=false",
        "--object-store-memory=100000000", "--disable-usage-stats", f"--temp-dir={temp_dir}",
        "--block",
    ]  # fmt: skip
    env = {
        **_without_ray(os.environ),
        **_auth(token),
        CLUSTER_MARK: address,
        "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0",  # SIGTERM: stop now, no drain wait
    }
    # --block: this process owns the cluster, and SIGTERM to it stops that cluster's processes only
    # (`ray stop` would stop every Ray cluster of this user on the machine)
    with log.open("wb") as out:
        return subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip


def _stop(head: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(head.pid, signal.SIGTERM)
    try:
        head.wait(timeout=hang(60))
    except subprocess.TimeoutExpired:
        os.killpg(head.pid, signal.SIGKILL)
        head.wait()


def _without_ray(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment minus Ray's own settings (``ray.init()`` here set RAY_AUTH_MODE in ours)."""
    return {k: v for k, v in environ.items() if not k.startswith("RAY_") and k != CLUSTER_MARK}


def _auth(token: str) -> dict[str, str]:
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token}


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
    deadline = time.monotonic() + hang(120)
    while not pids.exists():
        assert time.monotonic() < deadline, "the agent never started"
        time.sleep(0.1)
    worker, agent_group = (int(p) for p in pids.read_text().split())
    os.kill(worker, signal.SIGKILL)  # the Ray worker process dies mid-task
    with contextlib.suppress(ProcessLookupError):
        os.killpg(agent_group, signal.SIGKILL)  # its orphaned agent
    runner.join(timeout=hang(180))

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


def test_batch_cli_joins_an_existing_cluster_when_given_its_ray_address(
    existing_cluster: Existing, tmp_path: Path
) -> None:
    a, b = (make_calc_repo(tmp_path / "src" / name) for name in ("a", "b"))
    before = [fingerprint(a), fingerprint(b)]
    seen = tmp_path / "seen"
    fix = f'echo "${CLUSTER_MARK}" >> {seen}; {FIX}'
    rows = [
        {"id": "fix-a", "repo": str(a), "verifier": VERIFY, "agent": fix},
        {"id": "fix-b-url", "repo": b.as_uri(), "verifier": VERIFY, "agent": fix},
        {"id": "stall-a", "repo": str(a), "verifier": VERIFY, "agent": "true"},
    ]
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out"
    address = existing_cluster.address

    denied = _join(tasks, tmp_path / "denied", address, {"RAY_gcs_server_port_wait_time_s": "1"})
    done = _join(tasks, out, address, _auth(existing_cluster.token))

    assert denied.returncode == 2, denied.stderr  # no token: a line saying how to give it
    assert "RAY_AUTH_MODE=token" in denied.stderr
    assert "Traceback" not in denied.stderr
    assert not (tmp_path / "denied" / "results.jsonl").exists()
    assert done.returncode == 1, done.stderr  # one task stalled
    lines = (out / "results.jsonl").read_text().splitlines()
    got = {r["id"]: (r["result"], r["executor"]) for r in map(json.loads, lines)}
    assert got == {
        "fix-a": ("success", "ray"),
        "fix-b-url": ("success", "ray"),
        "stall-a": ("stalled", "ray"),
    }
    assert json.loads(done.stdout)["by_result"] == {"success": 2, "stalled": 1}
    assert (
        json.loads((out / "records" / "fix-a" / "report.json").read_text())["result"] == "success"
    )
    # the agents ran on the workers of the cluster `ray start` made, not on one the driver started
    assert seen.read_text().split() == [address, address]
    assert existing_cluster.head.poll() is None  # the driver left the cluster it joined running
    assert [fingerprint(a), fingerprint(b)] == before


def _join(
    tasks: Path, out: Path, address: str, extra_env: Mapping[str, str]
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "greenloop", "batch", str(tasks), "--out", str(out),
         "--executor", "ray", "--ray-address", address, "--max-iters", "2", "--format", "json"],
        check=False, env={**_without_ray(os.environ), **extra_env}, capture_output=True, text=True,
        timeout=hang(300),
    )  # fmt: skip


def test_batch_ray_live_table_shows_the_phase_of_each_running_task(
    cluster: None, tmp_path: Path
) -> None:
    watch_phases(tmp_path, executor="ray")

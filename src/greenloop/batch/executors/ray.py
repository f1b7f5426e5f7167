"""Each task a Ray task (``num_cpus = --cpus-per-task``); results stream back to the driver.

A local repository travels as a ``git bundle`` through the object store (no shared disk); the run
record comes back with the result. A worker that dies mid-task is retried once, then ``error``.
``--max-parallel-agents`` is one actor holding the slots; each task's phase goes to another, which
the driver reads for its live display. ``ray`` is imported here only.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from greenloop.batch import workspace
from greenloop.batch.executors import Deliver, MayStart, Phases, Started
from greenloop.batch.worker import Job, Outcome, error_outcome, run_task
from greenloop.errors import FatalError

POLL_S = 0.05
PHASES_EVERY_S = 1.0


class AgentSlots:
    """The actor behind ``--max-parallel-agents`` on a cluster."""

    def __init__(self, count: int) -> None:
        self.free = count

    def try_acquire(self) -> bool:
        if self.free <= 0:
            return False
        self.free -= 1
        return True

    def release(self) -> None:
        self.free += 1


@dataclass(frozen=True, slots=True, kw_only=True)
class ActorSlots:
    actor: Any

    @contextmanager
    def hold(self) -> Iterator[float]:
        import ray

        start = time.monotonic()
        while not ray.get(self.actor.try_acquire.remote()):
            time.sleep(POLL_S)
        try:
            yield time.monotonic() - start
        finally:
            ray.get(self.actor.release.remote())


class PhaseBoard:
    """The actor where each running task posts its phase; the driver reads it once a second."""

    def __init__(self) -> None:
        self.phases: dict[str, str] = {}

    def post(self, task_id: str, phase: str) -> None:
        self.phases[task_id] = phase

    def drop(self, task_id: str) -> None:
        self.phases.pop(task_id, None)

    def read(self) -> dict[str, str]:
        return dict(self.phases)


def ray_entry(job: Job, bundle: bytes | None, slots_actor: Any, board: Any) -> Outcome:
    """Runs on a Ray worker: unpack the bundle, run the task, return the row and the record."""
    slots = ActorSlots(actor=slots_actor) if slots_actor is not None else None
    task_id = job.task.id

    def phase(now: str) -> None:
        board.post.remote(task_id, now)  # not awaited: the display may lag, the task never waits

    try:
        if bundle is None:
            return run_task(job, slots=slots, phase=phase)
        with tempfile.TemporaryDirectory(prefix="greenloop-bundle-") as tmp:
            path = Path(tmp) / "repo.bundle"
            path.write_bytes(bundle)
            return run_task(job, bundle=path, slots=slots, phase=phase)
    finally:
        board.drop.remote(task_id)


def run_ray(
    jobs: Sequence[Job],
    *,
    address: str | None,
    workers: int,
    cpus_per_task: float,
    max_parallel_agents: int,
    state_dir: Path,
    deliver: Deliver,
    started: Started,
    phases: Phases = lambda phases: None,
    may_start: MayStart | None = None,
) -> bool:
    """Run every job on Ray; return True when interrupted by Ctrl-C.

    With ``may_start`` (a batch-wide budget) at most ``workers`` tasks are in flight, and no new
    one is submitted once it says no; without it every task is submitted at once."""
    ray = _import_ray()
    started_here = not ray.is_initialized()
    if started_here:
        _init(ray, address, workers * cpus_per_task)
    try:
        remote = ray.remote(num_cpus=cpus_per_task, max_retries=0)(ray_entry)
        slots = (
            ray.remote(num_cpus=0)(AgentSlots).remote(max_parallel_agents)
            if max_parallel_agents
            else None
        )
        board = ray.remote(num_cpus=0)(PhaseBoard).remote()
        bundles = _bundles(ray, jobs, state_dir / "bundles")

        def submit(job: Job) -> Any:
            started(job, None)
            return remote.remote(job, bundles.get(job.task.repo), slots, board)

        queue = list(jobs)
        window = len(queue) if may_start is None else workers
        pending = {submit(job): job for job in queue[:window]}
        later = queue[window:]

        def refill() -> None:
            while later and len(pending) < window and (may_start is None or may_start()):
                job = later.pop(0)
                pending[submit(job)] = job

        return _stream(ray, pending, submit, deliver, _reader(ray, board, phases), refill)
    finally:
        if started_here:
            ray.shutdown()


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise FatalError("the ray executor needs Ray: pip install 'greenloop[ray]'") from None
    return ray


def _init(ray: Any, address: str | None, cpus: float) -> None:
    if address:
        _join(ray, address)
    else:
        ray.init(
            address="local",  # our own cluster, never one `ray start` left on this machine
            num_cpus=max(1, round(cpus)),
            include_dashboard=False,
            log_to_driver=False,
            logging_level="WARNING",
        )


def _join(ray: Any, address: str) -> None:
    try:
        ray.init(address=address, log_to_driver=False, logging_level="WARNING")
    except ConnectionError as exc:
        raise FatalError(_join_failure(address, exc)) from None


def _join_failure(address: str, exc: BaseException) -> str:
    causes = []
    cause: BaseException | None = exc
    while cause is not None:
        causes.append(str(cause))
        cause = cause.__cause__ or cause.__context__
    if any("InvalidAuthToken" in c or "Authentication" in c for c in causes):
        # Ray >= 2.52: `ray start` asks for a token once ~/.ray/auth_token exists, and a driver
        # given an explicit address only sends one when told to
        return (
            f"the Ray cluster at {address} asks for a token: set RAY_AUTH_MODE=token and the "
            "cluster's token in RAY_AUTH_TOKEN (or its file in RAY_AUTH_TOKEN_PATH), then run again"
        )
    return f"could not join the Ray cluster at {address} (is `ray start` running there?): {exc}"


def _bundles(ray: Any, jobs: Sequence[Job], directory: Path) -> dict[str, Any]:
    """One bundle per local repository, put once into the object store."""
    refs: dict[str, Any] = {}
    directory.mkdir(parents=True, exist_ok=True)
    for job in jobs:
        repo = job.task.repo
        if not job.task.is_local or repo in refs:
            continue
        path = workspace.create_bundle(Path(repo), directory / f"{len(refs)}.bundle")
        refs[repo] = ray.put(path.read_bytes())
    return refs


def _reader(ray: Any, board: Any, phases: Phases) -> Callable[[], None]:
    """Read the board into the display, at most once every PHASES_EVERY_S."""
    last = 0.0

    def read() -> None:
        nonlocal last
        if time.monotonic() - last >= PHASES_EVERY_S:
            last = time.monotonic()
            phases(ray.get(board.read.remote()))

    return read


def _stream(
    ray: Any,
    pending: dict[Any, Job],
    submit: Any,
    deliver: Deliver,
    read_phases: Callable[[], None],
    refill: Callable[[], None] = lambda: None,
) -> bool:
    try:
        while pending:
            read_phases()
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=PHASES_EVERY_S)
            for ref in ready:
                job = pending.pop(ref)
                outcome, retry = _result(ray, ref, job)
                if retry is not None:
                    pending[submit(retry)] = retry
                elif outcome is not None:
                    deliver(outcome, None)
            refill()
    except KeyboardInterrupt:
        _interrupt(ray, pending, deliver)
        return True
    return False


def _result(ray: Any, ref: Any, job: Job) -> tuple[Outcome | None, Job | None]:
    from ray import exceptions

    try:
        return ray.get(ref), None
    except exceptions.RayTaskError as exc:  # our own code raised: not a lost worker
        return error_outcome(job, f"the task raised {type(exc.cause).__name__}: {exc.cause}"), None
    except exceptions.TaskCancelledError:
        return None, None
    except exceptions.RayError as exc:  # the worker process or its node died
        if job.attempt < 2:
            return None, replace(job, attempt=job.attempt + 1)
        return error_outcome(job, f"the worker died twice ({type(exc).__name__})"), None


def _interrupt(ray: Any, pending: dict[Any, Job], deliver: Deliver) -> None:
    """Ctrl-C: each running task gets a KeyboardInterrupt, ends ``interrupted``, attempt kept."""
    for ref in pending:
        ray.cancel(ref)
    for ref, job in pending.items():
        outcome, _ = _result(ray, ref, job)
        if outcome is not None and outcome.row.get("result") != "error":
            deliver(outcome, None)

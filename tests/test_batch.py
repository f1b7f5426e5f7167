"""``greenloop batch`` end to end: real git, real shell agents, real verifiers, real kill -9."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from batch_fixtures import (
    EXPECTED,
    FIX,
    VERIFY,
    fingerprint,
    git,
    make_calc_repo,
    watch_phases,
    write_tasks,
)
from greenloop import run_batch
from greenloop.batch.report import render_batch
from greenloop.batch.tasks import parse_tasks
from greenloop.demo.script import Reply
from greenloop.demo.server import ReplayServer
from greenloop.errors import FatalError
from greenloop.report.render import render_run
from limits import hang
from process_state import command_lines

TIMEOUT_S = hang(240)


def _batch(tasks: Path, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "greenloop", "batch", str(tasks), "--out", str(out),
        "--agent", FIX, "--workers", "2", "--max-iters", "3", *extra,
    ]  # fmt: skip


def _wait_for(condition: object, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _rows(out: Path) -> list[dict[str, object]]:
    return [json.loads(ln) for ln in (out / "results.jsonl").read_text().splitlines()]


def _orphans_done(out: Path) -> bool:
    """No worker of this batch runs any more. Not "every stage has an outcome": a driver killed
    between writing a stage's job.json and starting its worker leaves a stage no one will finish
    (CI at load ~2 waited 240 s for one); the re-run must take that task up."""
    state = str(out / "state").encode()
    for args in command_lines().values():
        argv = b"\0".join(args)  # /proc/PID/cmdline as it is (ps's words elsewhere)
        if b"greenloop.batch.worker" in argv and state in argv:
            return False
    return True


def test_batch_finishes_every_task_once_when_the_driver_is_killed_and_run_again(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "slow-started"
    tasks, sources = write_tasks(tmp_path, marker)
    before = [fingerprint(s) for s in sources]
    out = tmp_path / "out"
    driver = subprocess.Popen(_batch(tasks, out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _wait_for(marker.exists, "the slow task's second iteration")
    driver.kill()  # kill -9: no cleanup, no last row
    driver.wait()
    _wait_for(lambda: _orphans_done(out), "the orphaned workers to stop")
    first = {r["id"] for r in _rows(out)} if (out / "results.jsonl").exists() else set()
    assert "slow-c" not in first
    assert len(first) < len(EXPECTED)  # killed mid-batch: tasks still to start

    again = subprocess.run(
        _batch(tasks, out), check=False, capture_output=True, text=True, timeout=TIMEOUT_S
    )

    assert again.returncode == 1, again.stderr
    rows = _rows(out)
    assert sorted(str(r["id"]) for r in rows) == sorted(EXPECTED)  # each exactly once
    assert {str(r["id"]): r["result"] for r in rows} == EXPECTED
    assert [fingerprint(s) for s in sources] == before
    aside = out / "aside" / "work" / "slow-c.1"  # the killed attempt, kept
    killed = json.loads(
        next((out / "state").glob(f"slow-c.{driver.pid}-*/outcome.json")).read_text()
    )
    assert killed["result"] == "interrupted"
    assert killed["attempt_ref"]
    assert git(aside, "rev-parse", "--verify", killed["attempt_ref"]).strip()
    slow = next(r for r in rows if r["id"] == "slow-c")
    assert slow["iterations"] == 2
    assert Path(str(slow["record"]), "report.json").is_file()
    env = next(r for r in rows if r["id"] == "env-a")
    assert "no compiler" in str(env["reason"])
    cheat = next(r for r in rows if r["id"] == "cheat-b")
    assert "test_modified" in cheat["suspicious"]  # type: ignore[operator]
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["total"], summary["solved"]) == (8, 5)

    html = subprocess.run(
        [sys.executable, "-m", "greenloop", "report", "--batch", str(out), "--format", "html"],
        capture_output=True, text=True, check=True, cwd=out,
    ).stdout  # fmt: skip
    assert 'href="records/fix-a/report.html"' in html
    assert (out / "records" / "fix-a" / "report.html").is_file()


def test_batch_reports_every_bad_line_at_once_and_starts_nothing(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        '{"id": "ok", "repo": "r"}\n'
        '{"id": "bad id!", "repo": "r", "colour": 1}\n'
        "not json\n"
        '{"id": "ok", "repo": "r", "max_iters": 0, "verifier": []}\n'
    )
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "greenloop", "batch", str(tasks), "--out", str(out)],
        check=False, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 2
    for expected in (
        "tasks.jsonl:2: 'id'",
        "tasks.jsonl:2: unknown key 'colour'",
        "tasks.jsonl:3: not valid JSON",
        "tasks.jsonl:4: 'max_iters'",
        "tasks.jsonl:4: 'verifier'",
    ):
        assert expected in done.stderr
    assert not out.exists()


def test_batch_task_parser_rejects_a_repeated_id_with_both_line_numbers(tmp_path: Path) -> None:
    with pytest.raises(FatalError, match=r"T:3: id 'x' already used on line 1"):
        parse_tasks('{"id":"x","repo":"r"}\n\n{"id":"x","repo":"s"}\n', base=tmp_path, name="T")


def test_batch_reports_a_changed_line_and_redo_runs_it_again(tmp_path: Path) -> None:
    repo = make_calc_repo(tmp_path / "r")
    line = {"id": "one", "repo": str(repo), "verifier": "python3 -B test_calc.py", "agent": FIX}
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(line) + "\n")
    out = tmp_path / "out"
    assert run_batch(tasks, out=out, workers=1).exit_code == 0

    tasks.write_text(json.dumps({**line, "max_iters": 2}) + "\n")
    skipped = run_batch(tasks, out=out, workers=1)
    assert skipped.ran == ()
    assert len(skipped.changed) == 1
    assert "one (line 1) changed since it finished as success" in skipped.changed[0]

    redone = run_batch(tasks, out=out, workers=1, redo=True)
    assert [r["result"] for r in redone.ran] == ["success"]
    assert len(_rows(out)) == 2
    assert (out / "aside" / "work" / "one.1").is_dir()  # the first workspace, set aside
    assert (out / "aside" / "records" / "one.1" / "report.json").is_file()


def test_batch_ctrl_c_interrupts_running_tasks_and_a_second_run_resumes(tmp_path: Path) -> None:
    repo = make_calc_repo(tmp_path / "r")
    marker = tmp_path / "started"
    agent = f"[ -e {marker} ] || {{ touch {marker}; sleep 120; }}; {FIX}"
    tasks = tmp_path / "tasks.jsonl"
    line = {"id": "long", "repo": str(repo), "verifier": "python3 -B test_calc.py", "agent": agent}
    tasks.write_text(json.dumps(line) + "\n")
    out = tmp_path / "out"
    driver = subprocess.Popen(_batch(tasks, out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _wait_for(marker.exists, "the agent to start")
    os.kill(driver.pid, signal.SIGINT)
    assert driver.wait(timeout=TIMEOUT_S) == 130
    assert [r["result"] for r in _rows(out)] == ["interrupted"]

    resumed = subprocess.run(
        _batch(tasks, out), check=False, capture_output=True, text=True, timeout=TIMEOUT_S
    )
    assert resumed.returncode == 0, resumed.stderr
    assert [r["result"] for r in _rows(out)] == ["interrupted", "success"]
    assert (out / "aside" / "work" / "long.1").is_dir()


def test_batch_cli_parser_imports_neither_ray_nor_the_batch_runner() -> None:
    probe = (
        "import sys; from greenloop.cli.entry import build_parser; build_parser(); "
        "print(sorted(m for m in sys.modules if m == 'ray' or m.startswith('greenloop.batch.')))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['greenloop.batch.cli']"


def test_batch_local_retries_a_task_whose_worker_process_was_killed(tmp_path: Path) -> None:
    repo = make_calc_repo(tmp_path / "r")
    pids = tmp_path / "pids"
    agent = f"[ -e {pids} ] || {{ echo $PPID $$ > {pids}.tmp; mv {pids}.tmp {pids}; sleep 120; }}; {FIX}"
    tasks = tmp_path / "tasks.jsonl"
    line = {
        "id": "victim",
        "repo": str(repo),
        "verifier": "python3 -B test_calc.py",
        "agent": agent,
    }
    tasks.write_text(json.dumps(line) + "\n")
    out = tmp_path / "out"
    driver = subprocess.Popen(_batch(tasks, out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _wait_for(pids.exists, "the agent to start")
    worker, agent_group = (int(p) for p in pids.read_text().split())
    os.kill(worker, signal.SIGKILL)
    os.killpg(agent_group, signal.SIGKILL)

    assert driver.wait(timeout=TIMEOUT_S) == 0
    assert [(r["result"], r["attempt"]) for r in _rows(out)] == [("success", 2)]
    assert (out / "aside" / "work" / "victim.1").is_dir()


def test_batch_reports_the_time_the_built_in_agent_waited_when_the_model_answered_429(
    tmp_path: Path,
) -> None:
    repo = make_calc_repo(tmp_path / "r")
    tasks = tmp_path / "tasks.jsonl"
    line = {"id": "llm", "repo": str(repo), "verifier": VERIFY, "agent": "openai:replay-model"}
    tasks.write_text(json.dumps(line) + "\n")
    out = tmp_path / "out"
    script = [
        Reply.error(429, retry_after_ms=400),  # the client must wait 0.4 s, then ask again
        Reply.call("replace_in_file", path="calc.py", old="a - b", new="a + b"),
        Reply.call("finish", summary="add adds"),
    ]
    with ReplayServer(script) as server:
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url}
        env.pop("OPENAI_API_KEY", None)
        done = subprocess.run(
            [sys.executable, "-m", "greenloop", "batch", str(tasks), "--out", str(out)],
            env=env, check=False, capture_output=True, text=True, timeout=TIMEOUT_S,
        )  # fmt: skip
        asked = len(server.requests)

    assert done.returncode == 0, done.stderr
    assert asked == 3  # the 429, then two answered turns
    (row,) = _rows(out)
    assert row["agent_retry_wait_s"] == 0.4
    assert "llm: success" in done.stderr
    assert "agent waited 0.4 s on 429/5xx" in done.stderr  # the result line
    report = json.loads((out / "records" / "llm" / "report.json").read_text())
    assert report["history"][1]["usage"]["retry_wait_s"] == 0.4
    assert " s (0.4 s of it waiting to retry after 429/5xx), verify" in render_run(report, "text")
    text = subprocess.run(
        [sys.executable, "-m", "greenloop", "report", "--batch", str(out)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "agents waited 0.4 s to retry after 429/5xx" in text
    for fmt in ("md", "html"):
        page = subprocess.run(
            [sys.executable, "-m", "greenloop", "report", "--batch", str(out), "--format", fmt],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        assert "agents waited 0.4 s to retry after 429/5xx" in page, fmt


def test_batch_local_live_table_shows_the_phase_of_each_running_task(tmp_path: Path) -> None:
    watch_phases(tmp_path, executor="local")


def test_batch_html_report_lists_the_costliest_tasks_only_when_tasks_cost_something() -> None:
    summary = {
        "total": 2, "finished": 2, "solved": 1, "solve_rate": 0.5, "by_reason": [],
        "median": {}, "cost_usd": 0.0125, "slowest": [{"id": "a", "wall_s": 3.0}],
        "costliest": [{"id": "b", "cost_usd": 0.01}, {"id": "a", "cost_usd": 0.0025}], "tasks": [],
    }  # fmt: skip
    page = render_batch(summary, "html")
    assert "<h3>Costliest</h3>" in page
    assert '<ul class="plain"><li>b: $0.0100</li><li>a: $0.0025</li></ul>' in page
    assert "cost $0.0125" in page
    free = render_batch({**summary, "cost_usd": 0.0, "costliest": []}, "html")
    assert "Costliest" not in free
    assert "cost $" not in free

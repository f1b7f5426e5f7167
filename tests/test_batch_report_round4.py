"""The batch report as a new user reads it (issue 37): the banner, the next step, the task pages."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from greenloop.agents.scripted import scripted
from greenloop.batch.report import render_batch
from greenloop.config import Config, StageSpec
from greenloop.loop.loop import run_loop
from greenloop.report import render as report

PY = sys.executable
UNITTEST = f"{PY} -m unittest -q"
CALC = "def add(a, b):\n    return a - b\n"
TEST = (
    "import unittest\n\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n"
    "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n"
)
FIX = {"replace": "calc.py", "old": "return a - b", "new": "return a + b"}


def summary(tasks: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    base = {"total": 3, "valid": 2, "finished": 3, "solved": 2, "solve_rate": 1.0, "invalid": 1}
    base |= {"invalid_reasons": {"already green at baseline": 1}, "by_reason": [], "median": {}}
    return {**base, "slowest": [], "costliest": [], "tasks": tasks, **kw}


def test_a_batch_that_solved_every_valid_task_has_a_green_banner_beside_an_invalid_one() -> None:
    page = render_batch(summary([]), "html")
    assert "2/2 solved (100 %), 1 invalid: already green at baseline" in page
    assert '<section class="banner ok">' in page


def test_a_batch_with_an_unsolved_valid_task_keeps_the_red_banner() -> None:
    page = render_batch(summary([], solved=1, solve_rate=0.5), "html")
    assert '<section class="banner bad">' in page


def test_the_batch_next_step_names_the_stalled_task_not_an_invalid_one(tmp_path: Path) -> None:
    for name in ("green-a", "stuck-b"):
        (tmp_path / name).mkdir()
    tasks = [
        {"id": "green-a", "result": "invalid", "workspace": str(tmp_path / "green-a")},
        {"id": "stuck-b", "result": "stalled", "workspace": str(tmp_path / "stuck-b")},
    ]
    text = render_batch(summary(tasks), "text")
    (nxt,) = [line for line in text.splitlines() if line.lstrip().startswith("next:")]
    assert nxt.endswith(f"greenloop -C {tmp_path / 'stuck-b'} report")


def _batch_dir(tmp_path: Path, make_repo: Callable[..., Path]) -> Path:
    """A batch dir holding one task's record, its report.json from a real run of the loop."""
    root = make_repo({"calc.py": CALC, "test_calc.py": TEST, ".gitignore": "__pycache__/\n"})
    config = Config(stages=(StageSpec(name="test", run=UNITTEST),), timeout=300.0)
    result = run_loop(root, scripted([[FIX]]), config=config)
    out = tmp_path / "out"
    record = out / "records" / "fix-a"
    record.mkdir(parents=True)
    (record / "report.json").write_text(json.dumps(report.loop_json(result)))
    return out


def test_a_task_page_that_cannot_be_written_in_the_batch_dir_goes_beside_the_batch_page(
    tmp_path: Path, make_repo: Callable[..., Path]
) -> None:
    out = _batch_dir(tmp_path, make_repo)
    (out / "records" / "fix-a" / "report.html").mkdir()  # unwritable as a file, even for root
    pages = tmp_path / "pages"
    tasks = [{"id": "fix-a", "result": "success"}]
    page = render_batch(summary(tasks), "html", out, pages)
    assert 'href="batch-tasks/fix-a.html"' in page
    assert "<title>greenloop success" in (pages / "batch-tasks" / "fix-a.html").read_text()


def test_task_pages_are_rendered_again_only_when_their_report_changed(
    tmp_path: Path, make_repo: Callable[..., Path]
) -> None:
    out = _batch_dir(tmp_path, make_repo)
    tasks = [{"id": "fix-a", "result": "success"}]
    render_batch(summary(tasks), "html", out, out)
    page = out / "records" / "fix-a" / "report.html"
    page.write_text("kept")  # a page no older than its report is not written again
    render_batch(summary(tasks), "html", out, out)
    assert page.read_text() == "kept"
    report_json = out / "records" / "fix-a" / "report.json"
    report_json.write_text(report_json.read_text())  # the report is newer now
    render_batch(summary(tasks), "html", out, out)
    assert page.read_text() != "kept"


def test_a_batch_task_shows_the_phase_the_loop_is_in_not_the_one_before(tmp_path: Path) -> None:
    from greenloop.batch.tasks import Task
    from greenloop.batch.worker import Job, run_task

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text(CALC)
    (repo / "test_calc.py").write_text(TEST)
    for args in (["init", "-q"], ["add", "-A"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    identity = ["-c", "user.name=a", "-c", "user.email=a@b"]
    subprocess.run(["git", *identity, "commit", "-qm", "c"], cwd=repo, check=True)
    started = tmp_path / "agent-started"
    fix = f"touch {started}; sed -i 's/a - b/a + b/' calc.py"
    task = Task(id="t", repo=str(repo), verifier=UNITTEST, agent=fix)
    job = Job(task=task, agent=None, work_root=str(tmp_path / "w"), aside_root=str(tmp_path / "a"))
    told: list[tuple[str, bool]] = []
    outcome = run_task(job, phase=lambda label: told.append((label, started.exists())))
    assert outcome.row["result"] == "success", outcome.row
    while_agent_ran = [label for label, after in told if not after][-1]
    assert while_agent_ran == "iter 1/5 · agent"
    assert [label for label, _ in told] == [
        "clone", "setup", "baseline", "iter 1/5 · agent", "iter 1/5 · verify"
    ]  # fmt: skip

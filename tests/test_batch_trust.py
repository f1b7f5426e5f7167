"""Numbers a team can trust from ``greenloop batch`` (issue 28): checks before anything starts,
already-green tasks out of the solve rate, resume that says what it found, pages that link."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from batch_fixtures import FIX, VERIFY, git, make_calc_repo
from greenloop import run_batch
from limits import hang

TIMEOUT_S = hang(240)


def _greenloop(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "greenloop", *args],
        check=False, capture_output=True, text=True, timeout=TIMEOUT_S, cwd=cwd,
    )  # fmt: skip


def _write(tasks: Path, *rows: dict[str, object]) -> Path:
    tasks.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tasks


def _green_repo(root: Path) -> Path:
    repo = make_calc_repo(root)
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(repo, "commit", "-qam", "already fixed")
    return repo


def test_batch_without_an_agent_names_each_task_and_starts_nothing(tmp_path: Path) -> None:
    repo = make_calc_repo(tmp_path / "r")
    tasks = _write(
        tmp_path / "tasks.jsonl",
        {"id": "one", "repo": str(repo), "verifier": VERIFY},
        {"id": "two", "repo": str(repo), "verifier": VERIFY, "agent": FIX},
        {"id": "three", "repo": str(repo), "verifier": VERIFY},
    )
    out = tmp_path / "out"

    done = _greenloop("batch", str(tasks), "--out", str(out))

    assert done.returncode == 2
    assert "tasks.jsonl:1: task 'one' has no agent: pass --agent" in done.stderr
    assert "tasks.jsonl:3: task 'three' has no agent" in done.stderr
    assert "'two'" not in done.stderr
    assert not out.exists()


def test_batch_lists_missing_repos_refs_agents_and_misspelt_keys_in_one_pass(
    tmp_path: Path,
) -> None:
    repo = make_calc_repo(tmp_path / "r")
    (tmp_path / "plain").mkdir()
    tasks = _write(
        tmp_path / "tasks.jsonl",
        {"id": "gone", "repo": "nowhere", "agent": FIX},
        {"id": "noref", "repo": str(repo), "ref": "v9", "agent": FIX},
        {"id": "typo", "repo": str(repo), "max_iter": 2, "agent": FIX},
        {"id": "typo", "repo": str(repo), "max_iters": 0},
        {"id": "plain", "repo": "plain", "agent": FIX},
        {"id": "cli", "repo": str(repo), "agent": "no-such-agent-cli --go"},
    )
    out = tmp_path / "out"

    done = _greenloop("batch", str(tasks), "--out", str(out), "--agent", FIX)

    assert done.returncode == 2
    for expected in (
        f"tasks.jsonl:1: task 'gone': repo {tmp_path / 'nowhere'} does not exist",
        "tasks.jsonl:2: task 'noref': ref 'v9' not found in",
        "tasks.jsonl:3: unknown key 'max_iter' (did you mean 'max_iters'?)",
        "tasks.jsonl:4: 'max_iters': expected a positive whole number",
        "tasks.jsonl:4: id 'typo' already used on line 3",
        f"tasks.jsonl:5: task 'plain': repo {tmp_path / 'plain'} is not a git repository",
        "tasks.jsonl:6: task 'cli': agent 'no-such-agent-cli --go': --agent",
    ):
        assert expected in done.stderr, expected
    assert not out.exists()


def test_an_already_green_task_is_invalid_and_left_out_of_the_solve_rate(tmp_path: Path) -> None:
    red = make_calc_repo(tmp_path / "red")
    green = _green_repo(tmp_path / "green")
    tasks = _write(
        tmp_path / "tasks.jsonl",
        {"id": "fixable", "repo": str(red), "verifier": VERIFY, "agent": FIX},
        {"id": "planted-uncaught", "repo": str(green), "verifier": VERIFY, "agent": FIX},
    )
    out = tmp_path / "out"

    done = _greenloop("batch", str(tasks), "--out", str(out))

    assert done.returncode == 1, done.stderr  # not every task succeeded
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["solved"], summary["invalid"], summary["valid"]) == (1, 1, 1)
    assert summary["solve_rate"] == 1.0
    assert "1/1 solved (100 %), 1 invalid: already green at baseline" in done.stdout
    rows = {r["id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert rows["planted-uncaught"]["result"] == "invalid"
    assert rows["planted-uncaught"]["iterations"] == 0


def test_resume_reruns_a_task_that_ended_in_an_error_and_says_what_it_found(
    tmp_path: Path,
) -> None:
    repo = make_calc_repo(tmp_path / "r")
    broken = make_calc_repo(tmp_path / "broken")
    (broken / "greenloop.toml").write_text("max_iterz = 3\n")
    git(broken, "add", "greenloop.toml")
    git(broken, "commit", "-qm", "a config with a typo")
    tasks = _write(
        tmp_path / "tasks.jsonl",
        {"id": "ok", "repo": str(repo), "verifier": VERIFY, "agent": FIX},
        {"id": "config", "repo": str(broken), "verifier": VERIFY, "agent": FIX},
    )
    out = tmp_path / "out"
    first = run_batch(tasks, out=out, workers=1)
    assert {r["id"]: r["result"] for r in first.ran} == {"ok": "success", "config": "error"}
    assert first.summary["finished"] == 1

    (broken / "greenloop.toml").write_text("max_iters = 3\n")
    git(broken, "commit", "-qam", "the typo fixed")
    again = _greenloop("batch", str(tasks), "--out", str(out))

    assert again.returncode == 0, again.stderr
    assert "resuming: 1 finished (skipped), 1 to run again" in again.stderr
    assert "config: success" in again.stderr
    assert "1 earlier workspace(s) to move aside" in again.stderr
    assert (out / "aside" / "work" / "config.1").is_dir()


def test_redo_failed_runs_the_unsolved_tasks_again_and_reports_changed_options(
    tmp_path: Path,
) -> None:
    repo = make_calc_repo(tmp_path / "r")
    tasks = _write(
        tmp_path / "tasks.jsonl",
        {"id": "solved", "repo": str(repo), "verifier": VERIFY, "agent": FIX},
        {"id": "stuck", "repo": str(repo), "verifier": VERIFY, "agent": "true"},
    )
    out = tmp_path / "out"
    first = run_batch(tasks, out=out, workers=1, overrides={"max_iters": 2})
    assert {r["id"]: r["result"] for r in first.ran} == {"solved": "success", "stuck": "stalled"}

    again = run_batch(tasks, out=out, workers=1, overrides={"max_iters": 3}, redo_failed=True)

    assert [r["id"] for r in again.ran] == ["stuck"]
    assert again.skipped == ("solved",)
    assert again.changed == (
        "solved (line 1) is run with another agent or other options since it finished as "
        "success; skipped: pass --redo to run it again",
    )


def test_batch_html_links_resolve_from_where_the_page_is_written(tmp_path: Path) -> None:
    repo = make_calc_repo(tmp_path / "r")
    tasks = _write(
        tmp_path / "tasks.jsonl",
        {"id": "fix", "repo": str(repo), "verifier": VERIFY, "agent": FIX},
        {"id": "stuck", "repo": str(repo), "verifier": VERIFY, "agent": "true"},
    )
    out = tmp_path / "out"
    run_batch(tasks, out=out, workers=1, overrides={"max_iters": 2})
    elsewhere = tmp_path / "pages" / "today"
    elsewhere.mkdir(parents=True)

    done = _greenloop(
        "report", "--batch", str(out), "--format", "html", "-o", "batch.html", cwd=elsewhere
    )

    assert done.returncode == 0, done.stderr
    page = (elsewhere / "batch.html").read_text()
    assert '<a href="../../out/records/fix/report.html">fix</a>' in page
    assert (elsewhere / "../../out/records/fix/report.html").resolve().is_file()
    assert '<span class="verdict ok">success</span>' in page
    assert '<span class="verdict bad">stalled</span>' in page
    assert ".banner.ok" in page  # the run page's stylesheet


def test_an_env_failure_row_says_what_failed(tmp_path: Path) -> None:
    repo = make_calc_repo(tmp_path / "r")
    (repo / "test_calc.py").write_text("import nosuchmodule_gl\n\n\ndef test_a():\n    pass\n")
    git(repo, "commit", "-qam", "a test needing an absent module")
    verifier = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    tasks = _write(
        tmp_path / "tasks.jsonl",
        {"id": "env", "repo": str(repo), "verifier": verifier, "agent": FIX},
    )
    out = tmp_path / "out"

    done = _greenloop("batch", str(tasks), "--out", str(out))

    (row,) = map(json.loads, (out / "results.jsonl").read_text().splitlines())
    assert row["result"] == "env_failure"
    assert row["what_failed"] == "No module named 'nosuchmodule_gl'"
    assert "not the code's fault" in done.stdout
    assert ": No module named 'nosuchmodule_gl'" in done.stdout


def test_batch_stats_counts_a_batch_from_its_results(tmp_path: Path) -> None:
    repo = make_calc_repo(tmp_path / "r")
    green = _green_repo(tmp_path / "green")
    tasks = _write(
        tmp_path / "tasks.jsonl",
        {"id": "fix", "repo": str(repo), "verifier": VERIFY, "agent": FIX},
        {"id": "stuck", "repo": str(repo), "verifier": VERIFY, "agent": "true"},
        {"id": "green", "repo": str(green), "verifier": VERIFY, "agent": FIX},
    )
    out = tmp_path / "out"
    run_batch(tasks, out=out, workers=1, overrides={"max_iters": 2})

    text = _greenloop("batch", "stats", str(out))
    data = _greenloop("batch", "stats", str(out), "--format", "json")

    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith(
        "3 tasks, 3 finished: 1 solved (50 % of the valid ones), 1 invalid"
    )
    assert "slowest:" in text.stdout
    stats = json.loads(data.stdout)
    assert stats["by_result"] == {"success": 1, "stalled": 1, "invalid": 1}
    assert stats["median"]["iterations"] == 1
    assert {t["id"] for t in stats["slowest"]} == {"fix", "stuck", "green"}
    missing = _greenloop("batch", "stats", str(tmp_path / "nothing"))
    assert missing.returncode == 2
    assert "has no results.jsonl" in missing.stderr

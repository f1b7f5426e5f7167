"""A budget on every loop (issue 27): ``--max-cost`` and ``--max-tokens`` from the usage the agent
reports, checked before each agent call; a batch-wide budget that stops starting new tasks."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from greenloop import run_batch
from limits import hang

TIMEOUT_S = hang(240)
STEPS = "".join(
    f"def test_step_{k}():\n    assert int(open('n').read()) >= {k}\n\n\n" for k in range(1, 6)
)
# One more step fixed per call, and what the call "cost", as a shell agent reports it.
AGENT = (
    "echo $(( $(cat n) + 1 )) > n; "
    'printf \'{"cost_usd": 0.02, "prompt_tokens": 1200, "completion_tokens": 300}\' '
    '> "$GREENLOOP_USAGE_FILE"'
)
VERIFY = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_steps.py"]


def _steps_repo(make_repo: Callable[..., Path], name: str = "repo") -> Path:
    return make_repo({"n": "0\n", "test_steps.py": STEPS}, name)


def _run(repo: Path, *flags: str) -> tuple[subprocess.CompletedProcess[str], dict[str, object]]:
    done = subprocess.run(
        [
            sys.executable, "-m", "greenloop", "run", "--agent", AGENT, "--max-iters", "5",
            "--format", "json", "--yes", *flags, "--", *VERIFY,
        ],
        cwd=repo, capture_output=True, text=True, check=False, timeout=TIMEOUT_S,
    )  # fmt: skip
    return done, json.loads(done.stdout)


def test_max_cost_stops_before_the_call_that_would_pass_it(
    make_repo: Callable[..., Path],
) -> None:
    repo = _steps_repo(make_repo)

    done, report = _run(repo, "--max-cost", "0.05")

    assert done.returncode == 1, done.stderr
    assert report["result"] == "budget_exhausted"
    assert report["iterations"] == 2  # $0.02 + $0.02, and a third would make $0.06
    assert "would pass --max-cost $0.05: spent $0.0400 and 3,000 tokens over 2 agent calls" in str(
        report["reason"]
    )
    assert "budget: $0.05; the agent reports no usage" in done.stderr  # the pre-flight plan


def test_max_tokens_stops_before_the_call_that_would_pass_it(
    make_repo: Callable[..., Path],
) -> None:
    repo = _steps_repo(make_repo)

    done, report = _run(repo, "--max-tokens", "4000")

    assert report["result"] == "budget_exhausted", done.stderr
    assert report["iterations"] == 2  # 1,500 + 1,500, and a third would make 4,500
    assert "would pass --max-tokens 4,000" in str(report["reason"])
    assert "the last one 1,500 tokens" in str(report["reason"])


def test_a_loop_without_a_cap_runs_to_green_and_records_what_it_spent(
    make_repo: Callable[..., Path],
) -> None:
    repo = _steps_repo(make_repo)

    done, report = _run(repo)

    assert report["result"] == "success", done.stderr
    history = report["history"]
    assert isinstance(history, list)
    assert [h["usage"]["cost_usd"] for h in history[1:]] == [0.02] * 5
    assert "budget: no cap" in done.stderr


def test_a_batch_budget_stops_starting_tasks_and_keeps_the_finished_rows(
    tmp_path: Path, make_repo: Callable[..., Path]
) -> None:
    repo = _steps_repo(make_repo)
    tasks = tmp_path / "tasks.jsonl"
    verifier = VERIFY
    tasks.write_text(
        "".join(
            json.dumps({"id": f"t{i}", "repo": str(repo), "verifier": verifier, "agent": AGENT})
            + "\n"
            for i in range(3)
        )
    )
    out = tmp_path / "out"

    result = run_batch(tasks, out=out, workers=1, overrides={"max_iters": 1}, max_cost=0.03)

    assert [r["id"] for r in result.ran] == ["t0", "t1"]  # $0.02, then $0.04 >= $0.03
    budget = result.summary["budget"]
    assert (budget["not_started"], budget["spent_usd"]) == (1, 0.04)
    text = subprocess.run(
        [sys.executable, "-m", "greenloop", "report", "--batch", str(out)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "batch budget $0.03 reached (spent $0.0400, 3,000 tokens): 1 task(s) not started" in text
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["cost_usd"] for r in rows] == [0.02, 0.02]

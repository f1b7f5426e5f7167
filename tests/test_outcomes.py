"""Memory across runs (issue 39): test outcomes per tree, known-flaky tests, `greenloop flaky`.
Real pytest runs of a suite with a test made flaky on purpose, real git, real processes."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from greenloop.verify import outcomes
from limits import hang

PY = sys.executable
# fails on every third run: a seeded, countable flake (the counter lives outside the tree)
FLAKY = """import os, pathlib

def test_sometimes():
    counter = pathlib.Path(os.environ["FLAKY_COUNTER"])
    n = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(n + 1))
    assert n % 3 != 2, "the network blinked"
"""
REAL = "def test_real():\n    assert 2 + 2 == 5\n"
STAGE = (
    '[[tool.greenloop.stage]]\nname = "test"\n'
    f'run = "{PY} -m pytest -q -p no:cacheprovider -p no:randomly"\n'
)


def check(root: Path, counter: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**__import__("os").environ, "FLAKY_COUNTER": str(counter)}
    return subprocess.run(
        [PY, "-m", "greenloop", "-C", str(root), *args],
        capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL,
        timeout=hang(300), check=False,
    )  # fmt: skip


@pytest.fixture
def flaky_repo(make_repo: Callable[..., Path]) -> Path:
    files = {"test_flaky.py": FLAKY, "pyproject.toml": STAGE, ".gitignore": "__pycache__/\n"}
    return make_repo(files)


def test_two_processes_recording_500_outcomes_each_lose_nothing(tmp_path: Path) -> None:
    script = (
        "import sys\nfrom pathlib import Path\nfrom greenloop.verify import outcomes\n"
        "for i in range(500):\n"
        "    o = outcomes.Outcome(tree='t', check='pytest', full=True, failed=(f'{sys.argv[1]}{i}',))\n"
        "    outcomes.record(Path(sys.argv[2]), [o])\n"
    )
    procs = [subprocess.Popen([PY, "-c", script, name, str(tmp_path)]) for name in ("a", "b")]
    assert [p.wait(timeout=hang(300)) for p in procs] == [0, 0]
    lines = (tmp_path / outcomes.FILE).read_text().splitlines()
    assert len(lines) == 1000
    failed = {json.loads(line)["failed"][0] for line in lines}  # every line is whole JSON
    assert failed == {f"{n}{i}" for n in "ab" for i in range(500)}


def test_the_memory_keeps_the_newest_lines_when_it_grows_past_its_bound(tmp_path: Path) -> None:
    many = [
        outcomes.Outcome(tree="t", check="c", full=True, failed=(f"x{i}",)) for i in range(7000)
    ]
    outcomes.record(tmp_path, many)
    kept = outcomes.read(tmp_path)
    assert len(kept) == outcomes.KEEP
    assert kept[-1]["failed"] == ["x6999"]


def test_a_test_that_passed_and_failed_on_one_tree_is_never_the_first_failure(
    flaky_repo: Path, tmp_path: Path
) -> None:
    (flaky_repo / "test_real.py").write_text(REAL)
    subprocess.run(["git", "add", "-A"], cwd=flaky_repo, check=True)
    subprocess.run(["git", "commit", "-qm", "a real bug"], cwd=flaky_repo, check=True)
    counter = tmp_path / "counter"
    named = 0
    for n in range(9):
        out = check(flaky_repo, counter, "check", "--format", "json")
        data = json.loads(out.stdout)
        assert out.returncode == 1, out.stdout  # the real failure is always sent
        ids = [f["id"] for f in data["failures"]]
        assert "test_real.py::test_real" in ids
        if n > 2 and "test_flaky.py::test_sometimes" in ids:  # runs 6 and 9: known since run 3
            assert ids[0] == "test_real.py::test_real"
            assert data["known_flaky"] == ["test_flaky.py::test_sometimes"]
            note = "Known flaky (passed and failed on one tree before), not the first to fix: "
            assert f"{note}test_flaky.py::test_sometimes" in data["digest"]
            named += 1
    assert named == 2


def test_a_tree_whose_only_failure_is_a_known_flaky_test_is_exit_6_and_not_green(
    flaky_repo: Path, tmp_path: Path
) -> None:
    counter = tmp_path / "counter"
    codes = [check(flaky_repo, counter, "check").returncode for _ in range(2)]
    assert codes == [0, 0]
    out = check(flaky_repo, counter, "check")  # fails on the tree it passed on twice: a flake
    assert out.returncode == 6, out.stdout
    assert "ONLY KNOWN-FLAKY TESTS FAILED" in out.stdout
    assert "Only known-flaky tests failed: test_flaky.py::test_sometimes" in out.stdout
    listed = json.loads(check(flaky_repo, counter, "flaky", "--format", "json").stdout)
    assert [f["test"] for f in listed] == ["test_flaky.py::test_sometimes"]
    assert listed[0]["flips"] >= 1


def test_a_known_flaky_test_failing_three_runs_of_one_tree_is_a_real_failure_again(
    flaky_repo: Path, tmp_path: Path
) -> None:
    counter = tmp_path / "counter"
    for _ in range(3):  # pass, pass, fail: known-flaky
        check(flaky_repo, counter, "check")
    (flaky_repo / "test_flaky.py").write_text(FLAKY.replace("n % 3 != 2", "False"))
    subprocess.run(["git", "commit", "-qam", "now it always fails"], cwd=flaky_repo, check=True)
    codes = [check(flaky_repo, counter, "check").returncode for _ in range(3)]
    # still known-flaky on the new tree until it has failed every one of 3 runs of it
    assert codes == [6, 6, 1]
    out = check(flaky_repo, counter, "check")
    assert out.returncode == 1
    assert "known-flaky" not in out.stdout.lower()


def test_forget_drops_a_tests_history(flaky_repo: Path, tmp_path: Path) -> None:
    counter = tmp_path / "counter"
    for _ in range(3):
        check(flaky_repo, counter, "check")
    assert "test_flaky.py::test_sometimes" in check(flaky_repo, counter, "flaky").stdout
    forgot = check(flaky_repo, counter, "flaky", "--forget", "test_flaky.py::test_sometimes")
    assert forgot.returncode == 0
    assert "no known-flaky test" in check(flaky_repo, counter, "flaky").stdout


def test_over_20_loop_runs_the_agent_is_never_sent_the_known_flaky_test_first(
    flaky_repo: Path, tmp_path: Path
) -> None:
    (flaky_repo / "test_real.py").write_text(REAL)
    subprocess.run(["git", "add", "-A"], cwd=flaky_repo, check=True)
    subprocess.run(["git", "commit", "-qm", "a real bug"], cwd=flaky_repo, check=True)
    counter, prompts = tmp_path / "counter", tmp_path / "prompts"
    prompts.mkdir()
    # the agent keeps what it was sent and changes a file (a loop that changes nothing stalls)
    agent = f'cp "$GREENLOOP_PROMPT_FILE" {prompts}/$(date +%s%N); echo x >> notes.txt'
    sent = []
    for _ in range(20):
        out = check(flaky_repo, counter, "run", "-y", "--max-iters", "1", "--agent", agent)
        assert out.returncode == 1, out.stdout + out.stderr  # the real bug is never fixed here
        new = sorted(set(prompts.iterdir()) - set(sent))
        sent += new
        for prompt in new:
            text = prompt.read_text()
            assert "test_real" in text  # the real failure is always sent
            if "test_sometimes" in text:  # named, but never ahead of the real one
                assert text.index("test_real") < text.index("test_sometimes"), text
    assert len(sent) == 20
    assert "test_flaky.py::test_sometimes" in check(flaky_repo, counter, "flaky").stdout

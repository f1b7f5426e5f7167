"""Three real repositories and eight tasks with known outcomes, shared by the batch tests."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from greenloop.batch.progress import Counts, LiveProgress
from greenloop.batch.run import BatchResult, run_batch
from limits import hang

CALC = "def add(a, b):\n    return a - b\n"
TEST_CALC = (
    "from calc import add\n\n\n"
    "def test_add():\n"
    "    r = add(2, 3)\n"
    "    assert r == 5, f'add(2, 3) returned {r}'\n\n\n"
    "if __name__ == '__main__':\n"
    "    test_add()\n"
)
VERIFY = f"{sys.executable} -B test_calc.py"
FIX = "sed -i 's/a - b/a + b/' calc.py"
# Iteration 1 changes the failure; iteration 2 waits on its first run (the test kills there).
SLOW = (
    "case $GREENLOOP_ITERATION in 1) sed -i 's/a - b/a * b/' calc.py;; "
    "*) [ -e {marker} ] || {{ touch {marker}; sleep 120; }}; sed -i 's/a [*] b/a + b/' calc.py;; esac"
)
EXPECTED = {
    "fix-a": "success",
    "fix-b-url": "success",
    "fix-c-tag": "success",
    "argv-a": "success",
    "stall-c": "stalled",
    "env-a": "env_failure",
    "cheat-b": "suspicious_pass",
    "slow-c": "success",
}


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout


def make_calc_repo(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "calc.py").write_text(CALC)
    (root / "test_calc.py").write_text(TEST_CALC)
    (root / ".gitignore").write_text("__pycache__/\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "dev@example.com")
    git(root, "config", "user.name", "Dev")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "initial")
    return root


def fingerprint(root: Path) -> tuple[str, str, str]:
    """HEAD, every ref and the status: what 'the source repository is untouched' compares."""
    return (
        git(root, "rev-parse", "HEAD"),
        git(root, "for-each-ref"),
        git(root, "status", "--porcelain", "--ignored"),
    )


def write_tasks(tmp: Path, marker: Path) -> tuple[Path, list[Path]]:
    a, b, c = (make_calc_repo(tmp / "src" / name) for name in ("a", "b", "c"))
    git(c, "tag", "v1")
    (c / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(c, "commit", "-qam", "fixed after v1")  # HEAD is green; the task pins the red tag
    rows = [
        {
            "id": "slow-c",
            "repo": "src/c",
            "ref": "v1",
            "verifier": VERIFY,
            "agent": SLOW.format(marker=marker),
            "max_iters": 3,
        },
        {"id": "fix-a", "repo": "src/a", "verifier": VERIFY, "agent": FIX},
        {"id": "fix-b-url", "repo": b.as_uri(), "verifier": VERIFY, "agent": FIX},
        {"id": "fix-c-tag", "repo": str(c), "ref": "v1", "verifier": VERIFY, "agent": FIX},
        {"id": "argv-a", "repo": "src/a", "verifier": [sys.executable, "-B", "test_calc.py"]},
        {"id": "stall-c", "repo": "src/c", "ref": "v1", "verifier": VERIFY, "agent": "true"},
        {"id": "env-a", "repo": "src/a", "setup": "echo no compiler >&2; exit 3", "agent": FIX},
        {
            "id": "cheat-b",
            "repo": b.as_uri(),
            "verifier": VERIFY,
            "agent": "sed -i 's/assert r == 5/assert r == r/' test_calc.py",
        },
    ]
    tasks = tmp / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tasks, [a, b, c]


def latest_results(out: Path) -> dict[str, str]:
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return {r["id"]: r["result"] for r in rows}


# greenloop bench: a small project whose tests catch most single-site bugs
LIB = """\
def clamp(value, low, high):
    if value < low:
        return low
    if value > high:
        return high
    return value


def total(items):
    result = 0
    for item in items:
        result = result + item
    return result


def is_adult(age):
    return age >= 18
"""
TEST_LIB = """\
from lib import clamp, is_adult, total


def test_clamp():
    assert clamp(5, 0, 10) == 5
    assert clamp(-1, 0, 10) == 0
    assert clamp(11, 0, 10) == 10


def test_total():
    assert total([1, 2, 3]) == 6


def test_adult():
    assert is_adult(18) and not is_adult(17)


if __name__ == "__main__":
    for name, fn in sorted(globals().items()):
        if name.startswith("test_"):
            fn()
"""


def make_project(tmp: Path) -> Path:
    files = {"lib.py": LIB, "test_lib.py": TEST_LIB, ".gitignore": "__pycache__/\n"}
    return commit_files(tmp / "project", files)


def commit_files(root: Path, files: dict[str, str]) -> Path:
    """A new repository with ``files`` in one commit."""
    root.mkdir()
    for name, text in files.items():
        (root / name).write_text(text)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "-c", "user.name=d", "-c", "user.email=d@x", "commit", "-qm", "init")
    return root


# greenloop bench's oracle agent: it applies the inverse edit from DIR/answers/<mutant>.json.
ORACLE = """\
import json, os, sys
from pathlib import Path
mutant = Path.cwd().name.rsplit(".a", 1)[0]
answer = json.loads(Path(sys.argv[1], mutant + ".json").read_text())
path = Path(answer["path"])
lines = path.read_text().splitlines(keepends=True)
row = lines[answer["line"] - 1].encode()
col = answer["col"]
assert row[col : col + len(answer["old"].encode())] == answer["old"].encode()
lines[answer["line"] - 1] = (row[:col] + answer["new"].encode() + row[col + len(answer["old"].encode()):]).decode()
path.write_text("".join(lines))
"""


# the live table, watched while a task runs: the same phases from either executor
WATCH_S = hang(120)


def watch_phases(tmp: Path, *, executor: str) -> None:
    """Run one task whose agent waits for the test; assert the live table named its phases."""
    repo = make_calc_repo(tmp / "r")
    go = tmp / "go"
    agent = f"while [ ! -e {go} ]; do sleep 0.1; done; {FIX}"  # iteration 1 waits for the test
    tasks = tmp / "tasks.jsonl"
    line = {"id": "waits", "repo": str(repo), "verifier": VERIFY, "agent": agent}
    tasks.write_text(json.dumps(line) + "\n")
    show = LiveProgress(counts=Counts(total=1, done=0), stream=io.StringIO())
    done: list[BatchResult] = []
    runner = threading.Thread(
        target=lambda: done.append(
            run_batch(tasks, out=tmp / "out", executor=executor, workers=1, progress=show)
        )
    )
    runner.start()
    try:
        first = _wait_for_phase(show, runner, lambda phase: phase != "running")
        _wait_for_phase(show, runner, lambda phase: phase.startswith("iter 1"))
    finally:
        go.touch()
        runner.join(timeout=WATCH_S)

    assert first in ("clone", "setup", "baseline", "iter 1/5 · agent")
    assert [(r["id"], r["result"]) for r in done[0].ran] == [("waits", "success")]
    assert table_row(show, "waits") is None  # finished: off the table


def _wait_for_phase(
    show: LiveProgress, runner: threading.Thread, wanted: Callable[[str], bool]
) -> str:
    deadline = time.monotonic() + WATCH_S
    while (row := table_row(show, "waits")) is None or not wanted(row[1]):
        assert runner.is_alive(), f"the batch ended first: {table_lines(show)}"
        assert time.monotonic() < deadline, f"the phase never came: {table_lines(show)}"
        time.sleep(0.2)
    return row[1]


def table_lines(show: LiveProgress) -> list[str]:
    """The live table as a terminal without colours would show it."""
    console = Console(file=io.StringIO(), width=100, color_system=None)
    console.print(show.table())
    return console.file.getvalue().splitlines()  # type: ignore[attr-defined]


def table_row(show: LiveProgress, task_id: str) -> tuple[str, ...] | None:
    for line in table_lines(show):
        cells = tuple(c.strip() for c in line.split("│"))
        if cells[0] == task_id:
            return cells
    return None

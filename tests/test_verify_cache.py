"""The verification cache (issue 16): a green run is reused only while nothing it saw has changed.

Real git repos, the real Stop hook (``run_hook``, and the CLI where it matters) and a real verifier
process; the verifier counts its own runs in a file outside the repository.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from greenloop.detect.stages import Cascade, Stage
from greenloop.integrations.claude_hook import HookReply, run_hook
from greenloop.verify.cache import compute_key, tree_state
from limits import hang

PY = sys.executable
CALC = "def add(a, b):\n    return a + b\n"
CALC_BUG = "def add(a, b):\n    return a - b\n"
# Green when calc.py is right; ``mode`` "flaky" fails its first run only, "rerun" prints
# pytest-rerunfailures' summary of a test that needed a second try.
CHECK = """import pathlib, sys
log = pathlib.Path({log!r})
first = not log.exists()
with log.open("a") as f:
    f.write("run\\n")
if {mode!r} == "flaky" and first:
    sys.exit("FAILED test_add: first run fails")
ok = "a + b" in pathlib.Path("calc.py").read_text()
print("1 passed, 1 rerun in 0.01s" if {mode!r} == "rerun" else "1 passed")
sys.exit(0 if ok else "FAILED test_add: add(2, 3) != 5")
"""
CONFIG = '[tool.greenloop]\n{extra}[[tool.greenloop.stage]]\nname = "test"\nrun = "{py} check.py"\n'


def project(
    make_repo: Callable[..., Path], tmp_path: Path, *, mode: str = "", extra: str = ""
) -> tuple[Path, Path]:
    log = tmp_path / "verifier-runs.log"
    files = {
        "calc.py": CALC,
        "check.py": CHECK.format(log=str(log), mode=mode),
        "pyproject.toml": CONFIG.format(py=PY, extra=extra),
        ".gitignore": "__pycache__/\nbuild/\n",
    }
    return make_repo(files), log


def stop(root: Path, **kwargs: bool) -> HookReply:
    event = json.dumps({"session_id": "s", "cwd": str(root), "stop_hook_active": False})
    return run_hook(event, default_cwd=root, **kwargs)


def runs(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_verify_cache_reuses_a_green_run_and_says_when_it_happened(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root, log = project(make_repo, tmp_path)
    assert stop(root) == HookReply()
    again = stop(root)
    assert runs(log) == 1
    assert "green, reused: the verified run of" in again.system_message
    assert "s ago" in again.system_message
    assert not again.block_reason
    cached = list((root / ".git" / "greenloop" / "cache").glob("*.json"))
    assert len(cached) == 1
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=root, capture_output=True, check=True
    )
    assert status.stdout == b""  # the cache lives in the git dir, never in the work tree


def test_verify_cache_reruns_when_a_tracked_file_changes(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root, log = project(make_repo, tmp_path)
    stop(root)
    (root / "calc.py").write_text(CALC + "\n# an edit that keeps it green\n")
    assert stop(root) == HookReply()
    assert runs(log) == 2


def test_verify_cache_reruns_when_a_new_untracked_file_appears(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root, log = project(make_repo, tmp_path)
    stop(root)
    (root / "helper.py").write_text("X = 1\n")
    assert stop(root) == HookReply()
    assert runs(log) == 2


def test_verify_cache_is_not_invalidated_by_a_changed_ignored_file(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root, log = project(make_repo, tmp_path)
    (root / "build").mkdir()
    (root / "build" / "out.txt").write_text("one\n")
    stop(root)
    (root / "build" / "out.txt").write_text("two\n")
    assert "reused" in stop(root).system_message
    assert runs(log) == 1


def test_verify_cache_reruns_when_the_stage_command_changes(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root, log = project(make_repo, tmp_path)

    def check(*command: str) -> subprocess.CompletedProcess[str]:
        argv = [PY, "-m", "greenloop", "-C", str(root), "check", "--cache", "--", *command]
        return subprocess.run(argv, capture_output=True, text=True, check=False, timeout=hang(120))

    assert check(PY, "check.py").returncode == 0
    assert "reused" in check(PY, "check.py").stdout
    other = check(PY, "-B", "check.py")  # same tree, another command
    assert other.returncode == 0
    assert "reused" not in other.stdout
    assert runs(log) == 2


def test_verify_cache_reruns_after_the_time_to_live(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root, log = project(make_repo, tmp_path, extra="cache_ttl = 1\n")
    stop(root)
    time.sleep(1.5)
    assert stop(root) == HookReply()
    assert runs(log) == 2


def test_verify_cache_never_reuses_a_red_result(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root, log = project(make_repo, tmp_path)
    (root / "calc.py").write_text(CALC_BUG)
    assert stop(root).block_reason
    second = stop(root)
    assert "same failure came back unchanged" in second.system_message
    assert runs(log) == 2


def test_verify_cache_never_reuses_a_key_whose_verdict_flipped(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root, log = project(make_repo, tmp_path, mode="flaky")
    assert stop(root).block_reason  # red on this tree
    assert stop(root) == HookReply()  # green on the same tree: flaky
    assert stop(root) == HookReply()
    assert runs(log) == 3


def test_verify_cache_never_reuses_a_run_whose_runner_retried_a_test(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root, log = project(make_repo, tmp_path, mode="rerun")
    stop(root)
    assert stop(root) == HookReply()
    assert runs(log) == 2


def test_verify_cache_never_turns_a_red_tree_green_when_a_file_changes_between_stops(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root, log = project(make_repo, tmp_path)
    event = json.dumps({"session_id": "s", "cwd": str(root)})

    def hook() -> str:
        argv = [PY, "-m", "greenloop", "hook", "claude-stop"]
        out = subprocess.run(
            argv, input=event, capture_output=True, text=True, timeout=hang(120), check=True
        )
        return out.stdout

    assert hook() == ""
    (root / "calc.py").write_text(CALC_BUG)
    assert json.loads(hook())["decision"] == "block"
    assert runs(log) == 2


def test_verify_cache_is_off_with_no_cache_or_the_config_key(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root, log = project(make_repo, tmp_path)
    stop(root)
    assert stop(root, use_cache=False) == HookReply()
    assert runs(log) == 2
    (root / "pyproject.toml").write_text(CONFIG.format(py=PY, extra="cache = false\n"))
    stop(root)
    assert stop(root) == HookReply()
    assert runs(log) == 4


def test_verify_cache_reruns_when_an_environment_knob_changes(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root, log = project(make_repo, tmp_path)
    event = json.dumps({"session_id": "s", "cwd": str(root)})
    run_hook(event, default_cwd=root, environ=dict(os.environ, PYTEST_ADDOPTS="-x"))
    run_hook(event, default_cwd=root, environ=dict(os.environ, PYTEST_ADDOPTS="-q"))
    assert runs(log) == 2


KEY_CASCADE = Cascade(stages=(Stage(name="test", command="pytest -q", why="test"),), source="t")


def key_of(root: Path) -> str | None:
    return compute_key(root, KEY_CASCADE, timeout=60.0, all_stages=False)


def test_verify_cache_key_sees_a_same_size_rewrite_made_in_the_second_the_index_was_written(
    make_repo: Callable[..., Path],
) -> None:
    root = make_repo({"calc.py": CALC})
    path = root / "calc.py"
    _git_add(root, "calc.py")  # the index and calc.py's entry: this second
    stamp = path.stat().st_mtime_ns
    path.write_text(CALC.replace("+", "*"))  # same size, same second: stat data can't tell
    os.utime(path, ns=(stamp, stamp))
    time.sleep(1.1)  # the key's first look (its copy of the index) comes a second later
    state = tree_state(root)
    assert state is not None
    assert [p for p, _ in state[1]] == ["calc.py"]


def test_verify_cache_key_never_writes_the_real_index(make_repo: Callable[..., Path]) -> None:
    root = make_repo({"calc.py": CALC})
    (root / "calc.py").touch()  # a stale stat entry: a plain `git status` would rewrite the index
    index = root / ".git" / "index"
    before = index.stat()
    first = key_of(root)
    assert key_of(root) == first
    after = index.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert not (root / ".git" / "index.lock").exists()


def test_verify_cache_key_follows_the_index_of_a_linked_worktree(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root = make_repo({"calc.py": CALC})
    other = tmp_path / "other"
    _git(root, "worktree", "add", "-q", "-b", "side", str(other))
    first = key_of(other)
    assert first is not None
    (other / "calc.py").write_text(CALC_BUG)
    assert key_of(other) != first
    _git_add(other, "calc.py")  # staged: the worktree's own index changed, the key still sees it
    staged = key_of(other)
    (other / "calc.py").write_text(CALC)
    assert key_of(other) not in (staged, None)


def _git_add(root: Path, path: str) -> None:
    _git(root, "add", path)


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)

"""A git dir this user cannot write (a read-only mount), or another user's repository.

``check``, ``check --cache`` and the Stop hook verify as usual and keep their cache and state in
the user's cache directory; ``run``, which must commit, refuses in one line and touches nothing.
The git dir is made unwritable for real: immutable (``chattr +i``) when the tests run as root,
whom permission bits do not stop, else mode 0555.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from cli_process import git, greenloop
from greenloop.verify import cache as verify_cache
from test_claude_hook import CALC_BUG, digest_of, hook, project, reply, stop_event


@contextmanager
def unwritable(folder: Path) -> Iterator[None]:
    """``folder`` can be read but no entry can be created in it, even by root."""
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", str(folder)], check=True)
    else:
        folder.chmod(0o555)
    try:
        assert not os.access(folder, os.W_OK)
        yield
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
        else:
            folder.chmod(0o755)


def user_env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "user-cache")}


def test_run_refuses_a_git_dir_this_user_cannot_write_and_touches_nothing(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root = project(make_repo, CALC_BUG)
    head = git(root, "rev-parse", "HEAD")
    with unwritable(root / ".git"):
        out = greenloop(
            root, "run", "--agent", "echo edited > calc.py", "--yes", env=user_env(tmp_path)
        )
    assert out.returncode == 2, out.stdout + out.stderr
    assert f"this user cannot write {root / '.git'}" in out.stderr
    assert "Traceback" not in out.stderr
    assert git(root, "rev-parse", "HEAD") == head
    assert git(root, "status", "--porcelain") == ""
    assert (root / "calc.py").read_text() == CALC_BUG


def test_hook_blocks_a_failing_stop_and_keeps_its_count_when_the_git_dir_cannot_be_written(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root = project(make_repo, CALC_BUG, max_iters=1)
    env = user_env(tmp_path)
    with unwritable(root / ".git"):
        first = reply(hook(stop_event(root), env=env))
        second = reply(hook(stop_event(root, active=True), env=env))
    assert "test_calc.py::test_add" in digest_of(first)
    # the block was counted in the user's cache: the bound still holds
    assert "decision" not in second
    assert "max_iters = 1" in second["systemMessage"]
    states = list((tmp_path / "user-cache").glob("greenloop/repos/*/hooks/sess-1.json"))
    assert [json.loads(p.read_text())["blocks"] for p in states] == [1]
    assert not (root / ".git" / "greenloop").exists()


def test_hook_reuses_a_green_run_from_the_user_cache_when_the_git_dir_cannot_be_written(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root = project(make_repo)
    env = user_env(tmp_path)
    with unwritable(root / ".git"):
        first = hook(stop_event(root), env=env)
        second = reply(hook(stop_event(root), env=env))
    assert first.returncode == 0, first.stderr
    assert first.stdout == ""
    assert "reused" in second["systemMessage"]
    assert list((tmp_path / "user-cache").glob("greenloop/repos/*/cache/*.json"))


def test_check_is_green_with_its_by_products_named_when_the_git_dir_cannot_be_written(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root = project(make_repo)
    env = user_env(tmp_path)
    with unwritable(root / ".git"):
        cached = [greenloop(root, "check", "--cache", env=env) for _ in range(2)]
        leaves = greenloop(root, "check", "--", "sh", "-c", "touch made.txt", env=env)
    assert [c.returncode for c in cached] == [0, 0], cached[0].stderr + cached[1].stderr
    assert "reused" in cached[1].stdout
    assert leaves.returncode == 0, leaves.stderr
    assert "the verifier created made.txt" in leaves.stderr
    assert "internal error" not in leaves.stderr


def test_verify_cache_record_keeps_the_verdict_when_its_folder_cannot_be_written(
    tmp_path: Path,
) -> None:
    parent = tmp_path / "locked"
    parent.mkdir()
    entry = verify_cache.Entry(key="k1", verdict="failed", at=time.time(), duration_s=0.1)
    with unwritable(parent):
        stored = verify_cache.record(parent / "cache", entry)
    assert stored.verdict == "failed"
    assert list(parent.iterdir()) == []


def test_run_names_git_s_reason_and_fix_when_git_refuses_another_user_s_repository(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    # Another user's repository: git refuses it (safe.directory). Giving it away takes root, which
    # CI and this sandbox are; elsewhere os.chown raises and the test errors, it never skips.
    root = project(make_repo)
    for path in (root, *root.rglob("*")):
        os.chown(path, 65534, 65534, follow_symlinks=False)
    out = greenloop(root, "run", "--agent", "true", "--yes", env=user_env(tmp_path))
    assert out.returncode == 2
    assert f"git refuses {root}: detected dubious ownership" in out.stderr
    assert f"`git config --global --add safe.directory {root}`" in out.stderr
    assert "not inside a git work tree" not in out.stderr

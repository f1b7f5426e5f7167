from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

PY = sys.executable


@pytest.fixture(autouse=True, scope="session")
def _ctrl_c_works() -> Iterator[None]:
    """Started as ``nohup … &`` the suite inherits SIGINT ignored, and so would every process it
    starts (an ignored signal survives exec): tests that press Ctrl-C need it back (issue 13)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _ignore(signum: int, frame: object) -> None:
    """Caught and dropped: unlike SIG_IGN, a handler does not survive exec."""


@pytest.fixture(autouse=True, scope="session")
def _hangup_reaches_children() -> Iterator[None]:
    """``nohup`` ignores SIGHUP, and an ignored signal survives exec: greenloop then rightly runs
    on through a hang-up, and a test that sends one waits for nothing. The suite still shrugs
    hang-ups off (a handler that drops them), while the processes it starts get the default."""
    previous = signal.getsignal(signal.SIGHUP)
    if previous is signal.SIG_IGN:
        signal.signal(signal.SIGHUP, _ignore)
    yield
    signal.signal(signal.SIGHUP, previous)


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[..., Path]:
    """A real git repo with the given files committed on branch main."""

    def make(files: dict[str, str], name: str = "repo") -> Path:
        root = tmp_path / name
        root.mkdir()
        for rel, text in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        _git(root, "init", "-q", "-b", "main")
        _git(root, "config", "user.email", "dev@example.com")
        _git(root, "config", "user.name", "Dev")
        _git(root, "add", "-A")
        _git(root, "commit", "-qm", "initial")
        return root

    return make

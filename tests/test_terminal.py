"""What a person at a terminal sees (issue 13): a real pty for the live status, real pipes for CI."""

from __future__ import annotations

import fcntl
import os
import re
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from limits import hang

PY = sys.executable
SLOW_CALC = "def add(a, b):\n    return a - b\n"
SLOW_TEST = """\
import time

from calc import add


def test_add():
    time.sleep(10 if add(2, 3) != 5 else 0)  # a 10 s baseline; fast once fixed
    assert add(2, 3) == 5
"""
FIX = "perl -pi -e 's/a - b/a + b/' calc.py"
ESC = re.compile(rb"\x1b")


def greenloop(*args: str) -> list[str]:
    return [PY, "-m", "greenloop", *args]


def env(**extra: str) -> dict[str, str]:
    return {**os.environ, "TERM": "xterm-256color", "COLUMNS": "", **extra}


def record_on_pty(
    argv: Sequence[str], *, timeout: float = 180
) -> tuple[int, list[tuple[float, bytes]]]:
    """Run ``argv`` with stdin, stdout and stderr on a real 120x40 pty; every chunk, timed."""
    import pty

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen(
        argv, stdin=follower, stdout=follower, stderr=follower, env=env(), start_new_session=True
    )
    os.close(follower)
    chunks: list[tuple[float, bytes]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: every holder of the pty's other end has exited
            break
        if not data:
            break
        chunks.append((time.monotonic(), data))
    os.close(leader)
    return proc.wait(timeout=hang(30)), chunks


def seconds_shown(chunks: list[tuple[float, bytes]], label: str) -> set[int]:
    """The elapsed seconds the status line showed for one phase."""
    text = b"".join(c for _, c in chunks).decode("utf-8", "replace")
    return {int(s) for s in re.findall(re.escape(label) + r" · (\d+) s", text)}


@pytest.fixture
def slow_repo(make_repo: Callable[..., Path]) -> Path:
    return make_repo(
        {
            "calc.py": SLOW_CALC,
            "test_calc.py": SLOW_TEST,
            ".gitignore": "__pycache__/\n.pytest_cache/\n",
        }
    )


def test_terminal_status_ticks_every_second_during_a_10s_baseline_and_a_10s_agent_call(
    slow_repo: Path,
) -> None:
    agent = f"echo reading calc.py; sleep 10; {FIX}"
    verifier = [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    code, chunks = record_on_pty(
        greenloop(
            "-C", str(slow_repo), "run", "-y", "--subset", "off", "--agent", agent, "--", *verifier
        )
    )
    text = b"".join(c for _, c in chunks).decode("utf-8", "replace")
    assert code == 0, text
    # one redraw at least every second: every elapsed second of both 10 s phases was on screen
    assert set(range(1, 10)) <= seconds_shown(chunks, "baseline"), text
    assert set(range(1, 10)) <= seconds_shown(chunks, "iter 1/5 · agent"), text
    assert "reading calc.py" in text  # the agent's latest output line
    assert "iter 1/5 · agent 10 s" in text.replace("agent 11 s", "agent 10 s")


def test_piped_run_prints_one_line_per_step_and_no_control_sequences(
    make_repo: Callable[..., Path],
) -> None:
    root = make_repo({"calc.py": SLOW_CALC, "test_calc.py": SLOW_TEST.replace("10 if", "0 if")})
    proc = subprocess.run(
        greenloop(
            "-C", str(root), "run", "--agent", f"echo hi; {FIX}", "--", PY, "-m", "pytest", "-q"
        ),
        capture_output=True,
        env=env(),
        timeout=hang(180),
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert not ESC.search(proc.stdout + proc.stderr)
    lines = proc.stderr.decode().splitlines()
    assert sum(line.startswith("baseline · ") for line in lines) == 1
    assert sum(line.startswith("iter 1/5 · ") for line in lines) == 1
    assert "hi" not in lines  # the agent's output stays in the run record


def test_check_on_a_terminal_shows_a_ticking_status_line_and_piped_shows_none(
    make_repo: Callable[..., Path],
) -> None:
    # a newcomer's `greenloop check` on a 48 s suite (gorilla/mux) was 48 s of silence
    root = make_repo({"calc.py": SLOW_CALC})
    verifier = "import time; print('collecting 3 tests', flush=True); time.sleep(4)"
    _, chunks = record_on_pty(greenloop("-C", str(root), "check", "--", PY, "-c", verifier))
    text = b"".join(c for _, c in chunks).decode("utf-8", "replace")
    assert {1, 2, 3} <= seconds_shown(chunks, "check · verify"), text
    assert "greenloop: " in text  # the verdict, once the status line is gone
    assert "collecting 3 tests" in text  # the verifier's latest line
    piped = subprocess.run(
        greenloop("-C", str(root), "check", "--", PY, "-c", verifier.replace("4", "0")),
        capture_output=True,
        env=env(),
        timeout=hang(120),
        check=False,
    )
    assert not ESC.search(piped.stdout + piped.stderr)
    assert b"check \xc2\xb7" not in piped.stderr

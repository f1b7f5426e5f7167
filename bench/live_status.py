"""The live status line on a real pty (issue 13): how often it is redrawn during a 10 s baseline
and a 10 s agent call. Goal: at least one update a second (the elapsed seconds never skip one).

    python bench/live_status.py

A throw-away repo whose one test sleeps 10 s until fixed, and a shell agent that prints a line,
sleeps 10 s and fixes it; `greenloop run -y` runs with stdin, stdout and stderr on a 120x40 pty.
Every chunk read from the pty is timed; the status text of each redraw is parsed out of it.
"""

from __future__ import annotations

import fcntl
import itertools
import os
import pty
import re
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

PY = sys.executable
CALC = "def add(a, b):\n    return a - b\n"
TEST = (
    "import time\n\nfrom calc import add\n\n\ndef test_add():\n"
    "    time.sleep(10 if add(2, 3) != 5 else 0)\n    assert add(2, 3) == 5\n"
)
STATUS = re.compile(rb"(baseline|iter 1/5 \xc2\xb7 agent) \xc2\xb7 (\d+) s")


def make_repo(root: Path) -> None:
    (root / "calc.py").write_text(CALC)
    (root / "test_calc.py").write_text(TEST)
    (root / ".gitignore").write_text("__pycache__/\n.pytest_cache/\n")
    for args in (("init", "-q", "-b", "main"), ("add", "-A")):
        subprocess.run(["git", *args], cwd=root, check=True)
    subprocess.run(
        ["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "i"],
        cwd=root,
        check=True,
    )


def record(root: Path) -> list[tuple[float, bytes]]:
    agent = "echo reading calc.py; sleep 10; sed -i 's/a - b/a + b/' calc.py"
    argv = [PY, "-m", "greenloop", "-C", str(root), "run", "-y", "--subset", "off"]
    argv += ["--agent", agent, "--", PY, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color"}
    proc = subprocess.Popen(argv, stdin=follower, stdout=follower, stderr=follower, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append((time.monotonic(), data))
    os.close(leader)
    proc.wait()
    return chunks


def report(chunks: list[tuple[float, bytes]], phase: bytes) -> str:
    redraws = [(t, int(m[2])) for t, c in chunks for m in STATUS.finditer(c) if m[1] == phase]
    if len(redraws) < 2:
        return f"{phase.decode()}: no status line seen"
    times = [t for t, _ in redraws]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    shown = sorted({s for _, s in redraws})
    missing = [s for s in range(shown[0], shown[-1] + 1) if s not in shown]
    span = times[-1] - times[0]
    return (
        f"{phase.decode('utf-8')}: {len(redraws)} redraws over {span:.1f} s "
        f"({len(redraws) / span:.1f}/s), longest gap {max(gaps):.2f} s, seconds shown "
        f"{shown[0]}..{shown[-1]}, skipped {missing or 'none'}"
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_repo(root)
        chunks = record(root)
    for phase in (b"baseline", "iter 1/5 · agent".encode()):
        print(report(chunks, phase))
    print(f"load average: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

"""``greenloop hook post-tool`` on every shell call of the agent (issue 25): what it costs.

Run: python bench/tool_output.py [--runs N] [--no-callgrind]

Three payloads, each fed to ``greenloop hook post-tool`` on stdin as Claude Code sends them, in a
real git repository:

- ``pass-through``: PostToolUse of ``ls -la`` (2 KB of stdout): no runner named, nothing to do;
- ``pass-through, stages``: the same in a repository whose pyproject.toml configures stages: the
  gate reads their programs from the file's bytes and loads no configuration, git or processes;
- ``pre-tool``: PreToolUse of ``git status``: the same answer before the call;
- ``1 MB verifier``: PostToolUse of a wrapped ``python -m pytest`` whose output is a real pytest
  run of a generated suite (long assertion diffs, about 1 MB), exit 1: parsed, classified,
  digested, the full output saved redacted;
- ``1 MB verifier, stages``: the same in the repository with stages, where the gate loads them.

CPU is user + sys of the hook process (median); the instructions are counted by ``valgrind
--tool=callgrind`` (one run each: the same to a few thousand whatever the load), with ``python -c
pass`` beside them as the yardstick (its CPU per instruction turns a count into milliseconds on
this host). Goals: <= 40 ms to pass a non-verifier through, <= 100 ms on the 1 MB output.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import GREENLOOP, PYTHON, cached_env, machine, time_command, today

from greenloop.integrations.tool_hosts import wrap

GOALS_MS = {
    "pass-through": 40.0,
    "pass-through, stages": 40.0,
    "pre-tool": 40.0,
    "1 MB verifier": 100.0,
    "1 MB verifier, stages": 100.0,
}
STAGES = '[[tool.greenloop.stage]]\nname = "tests"\nrun = "./scripts/check.sh"\n'
CALLGRIND = ("valgrind", "--tool=callgrind")
TEST = (
    "import pytest\n\n\n"
    "@pytest.mark.parametrize('n', range({count}))\n"
    "def test_record(n):\n"
    "    got = {{f'field_{{k}}': k * n for k in range(30)}}\n"
    "    assert got == {{f'field_{{k}}': k * n + 1 for k in range(30)}}\n"
)


def make_repo(root: Path) -> Path:
    root.mkdir()
    (root / "tests").mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    return root


def real_output(root: Path, size: int = 1_000_000) -> str:
    """A real pytest run of a generated failing suite, grown until its output passes ``size``."""
    count = 20
    for _ in range(4):
        (root / "tests" / "test_big.py").write_text(TEST.format(count=count))
        run = subprocess.run(
            [PYTHON, "-m", "pytest", "-vv", "-p", "no:cacheprovider", "tests"],
            cwd=root,
            capture_output=True,
            text=True,
            check=False,
        )
        out = run.stdout + run.stderr
        if size <= len(out) <= size * 1.3:
            break
        count = int(count * size / max(len(out), 1) * 1.1) + 1
    return out


def payloads(root: Path, output: str, staged: Path) -> dict[str, str]:
    command = f"{PYTHON} -m pytest -vv -p no:cacheprovider tests"
    response = {"stderr": "", "interrupted": False, "isImage": False, "noOutputExpected": False}
    base = {"session_id": "bench", "cwd": str(root), "tool_name": "Bash"}
    listing = {
        **base,
        "hook_event_name": "PostToolUse",
        "tool_input": {"command": "ls -la", "description": "list"},
        "tool_response": {**response, "stdout": "-rw-r--r-- 1 dev dev 0 file\n" * 70},
    }
    verifier = {
        **base,
        "hook_event_name": "PostToolUse",
        "tool_input": {"command": wrap(command), "description": "tests"},
        "tool_response": {**response, "stdout": f"{output}\n\n[greenloop: exit 1]"},
    }
    return {
        "pass-through": json.dumps(listing),
        "pass-through, stages": json.dumps({**listing, "cwd": str(staged)}),
        "pre-tool": json.dumps(
            {
                **base,
                "hook_event_name": "PreToolUse",
                "tool_input": {"command": "git status", "description": "status"},
            }
        ),
        "1 MB verifier": json.dumps(verifier),
        "1 MB verifier, stages": json.dumps({**verifier, "cwd": str(staged)}),
    }


def instructions(argv: list[str], stdin: Path, cwd: Path, env: dict[str, str], out: Path) -> int:
    out.unlink(missing_ok=True)
    with stdin.open("rb") as feed:
        subprocess.run(
            [*CALLGRIND, f"--callgrind-out-file={out}", *argv],
            cwd=cwd,
            env=env,
            stdin=feed,
            capture_output=True,
            check=True,
        )
    for line in out.read_text(errors="replace").splitlines():
        if line.startswith("totals:"):
            return int(line.split()[1])
    return 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--no-callgrind", action="store_true")
    args = parser.parse_args()
    counting = not args.no_callgrind and shutil.which("valgrind") is not None
    env = cached_env()
    with tempfile.TemporaryDirectory() as tmp:
        root = make_repo(Path(tmp) / "repo")
        staged = make_repo(Path(tmp) / "staged")
        (staged / "pyproject.toml").write_text(STAGES)
        output = real_output(root)
        rows = []
        files = {}
        for name, payload in payloads(root, output, staged).items():
            files[name] = Path(tmp) / f"{name.replace(' ', '-').replace(',', '')}.json"
            files[name].write_text(payload)
        base_wall, base_cpu = time_command([PYTHON, "-c", "pass"], runs=args.runs, env=env)
        base_instr = (
            instructions([PYTHON, "-c", "pass"], files["pre-tool"], root, env, Path(tmp) / "cg")
            if counting
            else 0
        )
        for name, path in files.items():
            command = ["sh", "-c", f"exec {GREENLOOP} hook post-tool < '{path}'"]
            wall, cpu = time_command(command, runs=args.runs, cwd=root, env=env)
            counted = (
                instructions([GREENLOOP, "hook", "post-tool"], path, root, env, Path(tmp) / "cg")
                if counting
                else 0
            )
            rows.append((name, wall.median, cpu.median, counted))
        reply = subprocess.run(
            [GREENLOOP, "hook", "post-tool"],
            cwd=root,
            env=env,
            input=files["1 MB verifier"].read_bytes(),
            capture_output=True,
            check=False,
        )
    report(rows, len(output), (base_wall.median, base_cpu.median, base_instr), reply.stdout)


def report(
    rows: list[tuple[str, float, float, int]],
    size: int,
    base: tuple[float, float, int],
    reply: bytes,
) -> None:
    text = json.loads(reply)["hookSpecificOutput"]["updatedToolOutput"]["stdout"]
    print(f"{today()} {machine()}; the verifier's output: {size / 1e6:.2f} MB of real pytest -vv")
    print(
        f"python -c pass: {base[0] * 1000:.1f} ms wall, {base[1] * 1000:.1f} ms CPU, {base[2] / 1e6:.1f}M instr"
    )
    per_instr = base[1] / base[2] if base[2] else 0.0
    for name, wall, cpu, counted in rows:
        estimate = f", ~{counted * per_instr * 1000:.0f} ms at python's rate" if counted else ""
        goal = GOALS_MS[name]
        verdict = "PASS" if cpu * 1000 <= goal else "FAIL"
        print(
            f"{name}: {wall * 1000:.1f} ms wall, {cpu * 1000:.1f} ms CPU (median), "
            f"{counted / 1e6:.1f}M instr{estimate}; goal <= {goal:.0f} ms: {verdict}"
        )
    print(f"the 1 MB output became {len(text)} characters; first lines:")
    print("\n".join(text.splitlines()[:4]))


if __name__ == "__main__":
    main()

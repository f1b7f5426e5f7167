"""The Stop hook's own process on a repeated stop, per host, in instructions (issue 25).

Run: python bench/hook_hosts.py [--base SRC]   (needs valgrind; about a minute)

A green one-test repo, each host's documented Stop payload (the shapes of
tests/test_stop_hook_hosts.py), three runs to fill the caches, then one counted by
``valgrind --tool=callgrind`` (greenloop's own process only: a repeated stop on an unchanged tree
reuses the verified run, so that process is all the hook costs). Bytecode as an installed user has
it (``_harness.cached_env``: this sandbox's PYTHONDONTWRITEBYTECODE=1 compiled greenloop on every
start, ~2x the instructions), and the stops before the counted one run under callgrind too: a host
starts each stop with the same environment, which valgrind's own variables would otherwise change
(the memo of ``integrations/hook_hit.py`` is keyed by it). With ``--base``, the same for
another checkout's ``src`` (e.g. ``git archive <commit> src | tar -x -C /tmp/base``), run as
``hook claude-stop``: what choosing the host and its reply schema adds.
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
from _harness import PYTHON, cached_env, machine, today

PAYLOADS = {
    "claude": {"session_id": "b", "cwd": "{root}", "hook_event_name": "Stop"},
    "codex": {"session_id": "b", "turn_id": "t", "cwd": "{root}", "hook_event_name": "Stop"},
    "gemini": {"session_id": "b", "cwd": "{root}", "hook_event_name": "AfterAgent"},
    "copilot": {"sessionId": "b", "cwd": "{root}", "stopReason": "end_turn"},
    "cursor": {"conversation_id": "b", "hook_event_name": "stop", "workspace_roots": ["{root}"]},
}
CONFIG = '[[tool.greenloop.stage]]\nname = "t"\nrun = "{python} -m pytest -q -p no:cacheprovider"\n'


def repo(tmp: Path) -> Path:
    root = tmp / "repo"
    root.mkdir()
    (root / "test_x.py").write_text("def test_x():\n    assert 1\n")
    (root / "pyproject.toml").write_text(CONFIG.format(python=PYTHON))
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        git = ["git", "-c", "user.email=b@b", "-c", "user.name=bench", *cmd]
        subprocess.run(git, cwd=root, check=True, capture_output=True)
    return root


def counted(argv: list[str], event: str, env: dict[str, str], out: Path) -> int:
    # the verified run, then the code cache, the reuse and the hook's memo are in place
    subprocess.run(argv, input=event, env=env, capture_output=True, text=True, check=True)
    cg = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
    for _ in range(3):
        subprocess.run(
            [*cg, *argv], input=event, env=env, capture_output=True, text=True, check=True
        )
    for line in out.read_text(errors="replace").splitlines():
        if line.startswith("totals:"):
            return int(line.split()[1])
    raise SystemExit(f"no totals in {out}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", type=Path, help="another checkout's src folder, for comparison")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (apt-get install valgrind)")
    with tempfile.TemporaryDirectory() as tmp:
        root = repo(Path(tmp))
        results = {}
        runs = [(host, ["hook", "stop"], None) for host in PAYLOADS]
        if args.base:
            runs.append(("base claude-stop", ["hook", "claude-stop"], args.base.resolve()))
        for label, hook, src in runs:
            host = label.split()[-1] if src is None else "claude"
            event = json.dumps(PAYLOADS[host]).replace("{root}", str(root))
            env = dict(cached_env(), XDG_CACHE_HOME=str(Path(tmp) / f"cache-{label}"))
            if src is not None:
                env["PYTHONPATH"] = str(src)
            out = Path(tmp) / f"cg-{label.replace(' ', '-')}"
            results[label] = counted([PYTHON, "-m", "greenloop", *hook], event, env, out)
    print(f"{today()}, {machine()}: greenloop's process on a repeated stop (cache hit)")
    for label, total in results.items():
        print(f"  {label:18} {total / 1e6:7.1f}M instructions")


if __name__ == "__main__":
    main()

"""The Claude Code Stop hook on a green repo against the bare verifier (issue 6: it runs every turn).

Run: /tmp/glvenv/bin/python bench/hook.py [--runs N]
Both commands go through `sh -c` the way Claude Code runs a hook command; the hook gets real Stop-hook
JSON on stdin. The verifier is a pytest run of one passing test, so the figure is what a user pays.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from pathlib import Path

from _harness import GREENLOOP, HEADER, PYTHON, load, machine, row, time_command, today

TEST = "def test_ok():\n    assert 1 + 1 == 2\n"


def make_repo(root: Path) -> Path:
    (root / "test_ok.py").write_text(TEST)
    stage = f'[[tool.greenloop.stage]]\nname = "test"\nrun = "{PYTHON} -m pytest -q -p no:cacheprovider"\n'
    (root / "pyproject.toml").write_text(stage)
    (root / ".gitignore").write_text("__pycache__/\n")
    for args in (
        ("init", "-q"),
        ("add", "-A"),
        ("-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "i"),
    ):
        subprocess.run(["git", *args], cwd=root, check=True)
    return root


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = make_repo(Path(tmp))
        event = json.dumps({"session_id": "bench", "stop_hook_active": False, "cwd": str(root)})
        hook = ["sh", "-c", f"echo '{event}' | {GREENLOOP} hook claude-stop"]
        bare = ["sh", "-c", f"{PYTHON} -m pytest -q -p no:cacheprovider"]
        print(f"before: {load()}")
        bare_wall, _ = time_command(bare, runs=args.runs, cwd=root)
        hook_wall, _ = time_command(hook, runs=args.runs, cwd=root)
        print(f"after: {load()}")
    extra = hook_wall.median - bare_wall.median
    print(f"bare verifier: median {bare_wall.median * 1000:.0f} ms ({bare_wall.spread})")
    print(
        f"greenloop hook claude-stop: median {hook_wall.median * 1000:.0f} ms ({hook_wall.spread})"
    )
    print()
    print(HEADER)
    print(
        row(
            "hook",
            f"Stop hook on a green one-test pytest repo **{hook_wall.median * 1000:.0f} ms** vs the bare "
            f"verifier {bare_wall.median * 1000:.0f} ms: **+{extra * 1000:.0f} ms** per agent turn "
            f"({hook_wall.median / bare_wall.median:.2f}x)",
            "measure (issue 6)",
            "measured",
            today(),
            machine(),
        )
    )


if __name__ == "__main__":
    main()

"""Host drift (issue 36): the newest published version of each agent host's CLI, driven through
greenloop's real-host end-to-end tests, and a table of what each sent and whether the tests held.

    python scripts/host_drift.py [--prefix DIR] [--host claude --host codex ...] [--pinned]

Installs ``@anthropic-ai/claude-code``, ``@openai/codex``, ``@google/gemini-cli`` and
``@github/copilot`` at ``latest`` from npm under ``--prefix`` (``--pinned``: the versions CI pins,
from scripts/install_agent_clis.sh), runs each host's end-to-end tests against them with
``GREENLOOP_AGENT_CLIS`` pointing there and ``GREENLOOP_HOOK_LOG`` set, so every hook call writes
the shape of what the host sent (event and field names, never a value), and prints one markdown row
per host: version, the events and payload fields seen, passed/failed. Not run in CI: it reaches the
npm registry and takes minutes; CI keeps the pinned versions.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {
    "claude": "@anthropic-ai/claude-code",
    "codex": "@openai/codex",
    "gemini": "@google/gemini-cli",
    "copilot": "@github/copilot",
    "opencode": "opencode-ai",
}
PINNED = {"claude": "CLAUDE_VERSION", "codex": "CODEX_VERSION", "gemini": "GEMINI_VERSION",
          "copilot": "COPILOT_VERSION", "opencode": "OPENCODE_VERSION"}  # fmt: skip
# the real-host end-to-end tests, and the -k expression that picks each host's
TESTS = (
    "tests/test_claude_stop_hook_e2e.py",
    "tests/test_stop_hook_e2e.py",
    "tests/test_tool_output_e2e.py",
    "tests/test_codex_post_tool_e2e.py",
    "tests/test_claude_post_tool_cut_e2e.py",
    "tests/test_tool_output_copilot.py",
    "tests/test_opencode_e2e.py",
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prefix", type=Path, default=Path(tempfile.gettempdir()) / "gl-drift")
    parser.add_argument("--host", action="append", choices=sorted(PACKAGES), default=[])
    parser.add_argument("--pinned", action="store_true", help="CI's pinned versions, not latest")
    args = parser.parse_args()
    hosts = args.host or sorted(PACKAGES)
    versions = {h: _wanted(h, pinned=args.pinned) for h in hosts}
    _install(args.prefix, versions)
    rows = [_drive(h, _installed(args.prefix, h), args.prefix) for h in hosts]
    print("| host | version | events seen | payload fields seen | tests |")
    print("| --- | --- | --- | --- | --- |")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    return 0 if all(r[-1].startswith("pass") for r in rows) else 1


def _wanted(host: str, *, pinned: bool) -> str:
    if not pinned:
        return "latest"
    script = (ROOT / "scripts" / "install_agent_clis.sh").read_text()
    found = re.search(rf"^{PINNED[host]}=(\S+)$", script, re.M)
    return found.group(1) if found else "latest"


def _install(prefix: Path, versions: dict[str, str]) -> None:
    prefix.mkdir(parents=True, exist_ok=True)
    specs = [f"{PACKAGES[h]}@{v}" for h, v in versions.items()]
    subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(prefix), *specs],
        check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip


def _installed(prefix: Path, host: str) -> str:
    manifest = prefix / "node_modules" / PACKAGES[host] / "package.json"
    return str(json.loads(manifest.read_text()).get("version", "?"))


def _drive(host: str, version: str, prefix: Path) -> list[str]:
    logs = Path(tempfile.mkdtemp(prefix=f"gl-drift-{host}-"))
    env = {**os.environ, "GREENLOOP_AGENT_CLIS": str(prefix), "GREENLOOP_HOOK_LOG": str(logs)}
    selected = [t for t in TESTS if (ROOT / t).is_file()]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", host, *selected],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "no output"
    events, fields = _shapes(logs)
    verdict = ("pass: " if done.returncode == 0 else "FAIL: ") + summary
    return [host, version, ", ".join(sorted(events)) or "none", ", ".join(sorted(fields)), verdict]


def _shapes(logs: Path) -> tuple[set[str], set[str]]:
    events: set[str] = set()
    fields: set[str] = set()
    for log in logs.glob("*.jsonl"):
        for line in log.read_text().splitlines():
            shape = json.loads(line)
            events.add(f"{shape['hook']}:{shape['event'] or '(none)'}")
            fields.update(shape["fields"])
            if isinstance(shape["response"], list):
                fields.update(f"response.{k}" for k in shape["response"])
    return events, fields


if __name__ == "__main__":
    raise SystemExit(main())

"""Issue 12: every byte greenloop writes goes through one redaction point.

A real project whose failing test prints 35 seeded secret shapes; real `check` in every format,
a real `run` with a shell-command agent that prints and copies them, the run record, the step
summary, `report` in every format and the MCP replies: no seeded secret anywhere.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from greenloop.integrations import mcp_server
from limits import hang
from secret_shapes import PROJECT_PATTERN, SHAPES, leaks

PY = sys.executable
TEST_FILE = """\
import unittest
from pathlib import Path


class Secrets(unittest.TestCase):
    def test_secrets_in_the_failure_message(self):
        text = Path(__file__).with_name("secrets.txt").read_text()
        print(text)
        self.assertEqual(text, "", text)
"""
AGENT = "cat secrets.txt; echo 'password: agent-Pw-123456'; cp tests/secrets.txt copy.txt"


def seeded_repo(make_repo: Callable[..., Path]) -> Path:
    pattern = PROJECT_PATTERN.replace("\\", "\\\\")
    return make_repo(
        {
            "pyproject.toml": (
                "[tool.greenloop]\n"
                f'redact = ["{pattern}"]\n\n'
                "[[tool.greenloop.stage]]\n"
                'name = "test"\n'
                f'run = "{PY} -m unittest discover -s tests"\n'
            ),
            "tests/secrets.txt": "\n".join(line for line, _ in SHAPES) + "\n",
            "tests/test_secrets.py": TEST_FILE,
            "secrets.txt": "\n".join(line for line, _ in SHAPES) + "\n",
            ".gitignore": "__pycache__/\n",
        }
    )


def greenloop(root: Path, env: dict[str, str], *args: str) -> str:
    proc = subprocess.run(
        [PY, "-m", "greenloop", "-C", str(root), *args],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=hang(300),
    )
    assert proc.returncode in (0, 1, 130), proc.stderr
    return proc.stdout + proc.stderr


def written_files(root: Path) -> dict[str, str]:
    base = root / ".git" / "greenloop"
    return {
        str(p.relative_to(root)): p.read_text(errors="replace")
        for p in base.rglob("*")
        if p.is_file()
    }


def test_redaction_hides_every_seeded_secret_in_every_output_of_check_and_run(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root = seeded_repo(make_repo)
    summary = tmp_path / "step_summary.md"
    env = {**os.environ, "GITHUB_STEP_SUMMARY": str(summary), "NO_COLOR": "1"}
    outputs = {
        f"check --format {fmt}": greenloop(root, env, "check", "--format", fmt)
        for fmt in ("json", "github")  # github's tail is the text format
    }
    assert "test_secrets_in_the_failure_message" in outputs["check --format json"]
    outputs["run"] = greenloop(
        root, env, "run", "--agent", AGENT, "--max-iters", "1", "-y", "--subset", "off"
    )
    outputs["report --format json"] = greenloop(root, env, "report", "--format", "json")
    html = tmp_path / "report.html"
    greenloop(root, env, "report", "--format", "html", "-o", str(html))
    outputs["report.html"] = html.read_text()
    outputs["$GITHUB_STEP_SUMMARY"] = summary.read_text()
    outputs["mcp last_report"] = json.dumps(mcp_server._redacted(mcp_server.last_report_json(root)))
    outputs.update(written_files(root))

    assert any(name.endswith("agent.txt") for name in outputs)  # the agent really ran
    assert "[REDACTED]" in outputs["check --format github"]
    found = {name: leaks(text) for name, text in outputs.items() if leaks(text)}
    assert found == {}
    assert len(SHAPES) >= 30

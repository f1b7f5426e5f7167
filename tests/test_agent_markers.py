"""Verdicts do not depend on running inside an agent (issue 25 item 4): real vitest, real processes.

Vitest 4 (std-env 4.3's agent detection) switches to its ``agent`` reporter under CLAUDECODE,
AI_AGENT and the like: passing tests are left out, colours are off. greenloop runs the verifier
without those variables, and says which it removed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from greenloop.processes.process import run_command
from greenloop.verify.instrument import without_agent_markers
from limits import hang

PY = sys.executable
AGENT_ENVS = (
    {"CLAUDECODE": "1"},
    {"AI_AGENT": "claude-code"},
    {"GEMINI_CLI": "1", "CURSOR_AGENT": "1", "CODEX_THREAD_ID": "t-1", "AGENT": "1"},
)
CALC = "export function add(a, b) { return a - b }\nexport function mul(a, b) { return a * b }\n"
TESTS = (
    "import { test, expect } from 'vitest'\nimport { add, mul } from './src/calc.js'\n"
    "test('adds', () => { expect(add(2, 3)).toBe(5) })\n"
    "test('muls', () => { expect(mul(2, 3)).toBe(6) })\n"
    "test('adds again', () => { expect(add(1, 1)).toBe(2) })\n"
)


@pytest.fixture(scope="module")
def vitest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with real vitest 4 from npm and two failing tests of three."""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.fail("node and npm are needed: this test installs vitest with npm")
    root = tmp_path_factory.mktemp("vitest-project")
    package = {"name": "demo", "private": True, "type": "module", "scripts": {"test": "vitest run"}}
    (root / "package.json").write_text(json.dumps(package))
    argv = [npm, "install", "--no-audit", "--no-fund", "vitest@4"]
    done = run_command(argv, cwd=root, timeout_s=600)
    if done.exit_code != 0 or not (root / "node_modules/.bin/vitest").exists():
        pytest.fail(
            f"`npm install vitest@4` failed (exit {done.exit_code}):\n{done.merged[-2000:]}"
        )
    (root / "src").mkdir()
    (root / "src" / "calc.js").write_text(CALC)
    (root / "calc.test.js").write_text(TESTS)
    (root / ".gitignore").write_text("node_modules/\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


def clean_env() -> dict[str, str]:
    env, _ = without_agent_markers(os.environ)
    return env


def check_json(root: Path, env: dict[str, str]) -> dict[str, object]:
    out = subprocess.run(
        [PY, "-m", "greenloop", "check", "--format", "json", "--", "npm", "test"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=hang(300),
        check=False,
    )
    assert out.returncode == 1, out.stdout + out.stderr
    data: dict[str, object] = json.loads(out.stdout)
    return data


def timeless(digest: object) -> str:
    return re.sub(r"\d+(?:\.\d+)? s\b", "<t> s", str(digest))


def test_vitest_itself_prints_less_under_an_agent_variable(vitest: Path) -> None:
    """The other way: the variable does change the real runner's output."""
    bin_ = str(vitest / "node_modules/.bin/vitest")
    plain = run_command([bin_, "run"], cwd=vitest, timeout_s=300, env=clean_env())
    agent = run_command(
        [bin_, "run"], cwd=vitest, timeout_s=300, env=clean_env() | {"CLAUDECODE": "1"}
    )
    assert "✓ muls" in plain.merged
    assert "✓ muls" not in agent.merged  # the agent reporter leaves passing tests out
    assert "\u00d7 adds" in agent.merged  # vitest marks a failed test with U+00D7


@pytest.mark.parametrize("agent_env", AGENT_ENVS, ids="+".join)
def test_check_gives_the_same_verdict_and_digest_inside_an_agent_as_outside(
    vitest: Path, agent_env: dict[str, str]
) -> None:
    outside = check_json(vitest, clean_env())
    inside = check_json(vitest, clean_env() | agent_env)
    for key in ("verdict", "exit_code", "counts", "signature", "failures"):
        assert inside[key] == outside[key], key
    assert timeless(inside["digest"]) == timeless(outside["digest"])
    stages = inside["stages"]
    assert isinstance(stages, list)
    assert stages[0]["env_removed"] == sorted(agent_env)  # recorded: what the stage ran without
    outside_stages = outside["stages"]
    assert isinstance(outside_stages, list)
    assert outside_stages[0]["env_removed"] == []


def test_the_verifier_runs_without_agent_markers_and_keeps_everything_else(
    tmp_path: Path,
) -> None:
    probe = "import os; print(sorted(k for k in ('CLAUDECODE', 'AI_AGENT', 'KEEP_ME', 'EDITOR') if k in os.environ)); raise SystemExit(1)"
    env = clean_env() | {"CLAUDECODE": "1", "AI_AGENT": "x", "KEEP_ME": "1", "EDITOR": "vim"}
    out = subprocess.run(
        [PY, "-m", "greenloop", "check", "--format", "json", "--", PY, "-c", probe],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=hang(120),
        check=False,
    )
    data = json.loads(out.stdout)
    assert "['EDITOR', 'KEEP_ME']" in data["digest"]
    assert data["stages"][0]["env_removed"] == ["AI_AGENT", "CLAUDECODE"]


def test_a_variable_with_another_use_is_removed_only_when_its_value_names_an_agent() -> None:
    env, removed = without_agent_markers(
        {"EDITOR": "devin", "TERM_PROGRAM": "vscode", "PATH": "/root/.pi/agent/bin:/usr/bin"}
    )
    assert removed == ("EDITOR",)
    assert env == {"TERM_PROGRAM": "vscode", "PATH": "/root/.pi/agent/bin:/usr/bin"}

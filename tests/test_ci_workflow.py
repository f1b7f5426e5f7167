"""The project's own CI (.github/workflows/tests.yml): the suite on Linux and macOS and the
Windows smoke test, validated offline against SchemaStore's workflow schema as action.yml is."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from limits import hang
from test_action_schema import check_schema

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "tests.yml"
SMOKE = ROOT / "scripts" / "windows_smoke.py"


def test_the_ci_workflow_is_valid_under_the_published_workflow_schema() -> None:
    out = check_schema("vendor.github-workflows", WORKFLOW)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "ok -- validation done" in out.stdout


def test_the_workflow_schema_refuses_a_job_that_names_no_runner(tmp_path: Path) -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    del workflow["jobs"]["windows-smoke"]["runs-on"]
    broken = tmp_path / "tests.yml"
    broken.write_text(
        yaml.safe_dump(
            {"on": workflow[True], **{k: v for k, v in workflow.items() if k is not True}}
        )
    )
    out = check_schema("vendor.github-workflows", broken)
    assert out.returncode == 1
    assert "Schema validation errors were encountered" in out.stdout


def test_the_suite_runs_on_linux_and_macos_and_windows_gets_the_smoke_test() -> None:
    jobs = yaml.safe_load(WORKFLOW.read_text())["jobs"]
    assert jobs["suite"]["strategy"]["matrix"]["os"] == ["ubuntu-latest", "macos-latest"]
    assert jobs["suite"]["runs-on"] == "${{ matrix.os }}"
    assert any("pytest" in step.get("run", "") for step in jobs["suite"]["steps"])
    assert jobs["windows-smoke"]["runs-on"] == "windows-latest"
    runs = [step.get("run", "") for step in jobs["windows-smoke"]["steps"]]
    assert "python scripts/windows_smoke.py" in runs


def test_the_windows_smoke_test_passes_here_where_sh_is_taken_off_path() -> None:
    done = subprocess.run(
        [sys.executable, str(SMOKE)], capture_output=True, text=True, timeout=hang(300), check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "windows_smoke: ok"

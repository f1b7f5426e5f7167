"""action.yml, the example workflow and the GitLab job against their published schemas.

check-jsonschema vendors SchemaStore's schemas (github-action.json, github-workflow.json,
gitlab-ci.json): validated offline, with the CLI as a user runs it.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from limits import hang

ROOT = Path(__file__).resolve().parents[1]
ACTION = ROOT / "action.yml"
WORKFLOW = ROOT / "examples" / "github" / "greenloop-fix.yml"
GITLAB_JOB = ROOT / "examples" / "gitlab" / "greenloop.gitlab-ci.yml"


def check_schema(schema: str, path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, str(path)],
        check=False,
        capture_output=True,
        text=True,
        timeout=hang(120),
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(
    ("schema", "path"),
    [
        ("vendor.github-actions", ACTION),
        ("vendor.github-workflows", WORKFLOW),
        ("vendor.gitlab-ci", GITLAB_JOB),
    ],
    ids=["action", "workflow", "gitlab-job"],
)
def test_file_is_valid_under_its_published_schema(schema: str, path: Path) -> None:
    out = check_schema(schema, path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "ok -- validation done" in out.stdout


def test_action_schema_refuses_a_composite_step_without_its_shell(tmp_path: Path) -> None:
    """The validation can fail: a run step of a composite action must name its shell."""
    action = yaml.safe_load(ACTION.read_text())
    del next(s for s in action["runs"]["steps"] if "run" in s)["shell"]
    broken = tmp_path / "action.yml"
    broken.write_text(yaml.safe_dump(action, sort_keys=False))
    out = check_schema("vendor.github-actions", broken)
    assert out.returncode == 1
    assert "Schema validation errors were encountered" in out.stdout


def test_action_installs_the_greenloop_of_the_ref_its_uses_line_pins() -> None:
    """Not a PyPI name by default: the action's own checkout is the version `uses:` pinned, and a
    package of that name on PyPI need not be this project's."""
    action = yaml.safe_load(ACTION.read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert action["inputs"]["greenloop-version"]["default"] == "path:."
    assert f"greenloop=={project['version']}" in GITLAB_JOB.read_text()


def test_action_pins_each_action_it_uses_to_a_major_version() -> None:
    action = yaml.safe_load(ACTION.read_text())
    uses = [s["uses"] for s in action["runs"]["steps"] if "uses" in s]
    assert uses == ["actions/setup-python@v7", "actions/upload-artifact@v7"]


def test_action_has_the_inputs_and_outputs_of_issue_27() -> None:
    action = yaml.safe_load(ACTION.read_text())
    for name in (
        "agent",
        "verifier",
        "max-iters",
        "max-time",
        "max-cost-usd",
        "mode",
        "python-version",
        "greenloop-version",
        "github-token",
    ):
        assert name in action["inputs"], name
    assert action["inputs"]["agent"]["required"] is True
    assert action["inputs"]["github-token"]["default"] == "${{ github.token }}"
    assert {"result", "iterations", "report"} <= set(action["outputs"])


def test_example_workflow_never_runs_on_this_repository() -> None:
    assert not (ROOT / ".github" / "workflows" / WORKFLOW.name).exists()
    workflow = yaml.safe_load(WORKFLOW.read_text())
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as true
    assert triggers["pull_request"] == {"types": ["labeled"]}
    assert triggers["check_run"] == {"types": ["completed"]}
    assert triggers["workflow_run"]["types"] == ["completed"]
    assert workflow["permissions"] == {
        "contents": "write",
        "pull-requests": "write",
        "checks": "write",
    }
    job = workflow["jobs"]["fix"]
    assert "head.repo.full_name == github.repository" in job["if"]  # never a fork's code
    assert "head_repository.full_name == github.repository" in job["if"]
    assert "github.event.pull_request.number" in workflow["concurrency"]["group"]


def test_an_openai_agent_gets_the_llm_extra_installed_with_greenloop(tmp_path: Path) -> None:
    """`agent: openai:MODEL` is the built-in agent: its SDK must come with the action's install."""
    import os

    action = yaml.safe_load((ROOT / "action.yml").read_text())
    (step,) = [s for s in action["runs"]["steps"] if s.get("id") == "install"]
    script = tmp_path / "install.sh"
    script.write_text(step["run"])
    output = tmp_path / "github_output"
    env = {
        **os.environ,
        "GREENLOOP_PYTHON": sys.executable,
        "GREENLOOP_VERSION": "path:.",
        "GREENLOOP_ACTION_PATH": str(ROOT),
        "GREENLOOP_HOME": str(tmp_path / "home"),
        "IN_AGENT": "openai:gpt-4o-mini",
        "GITHUB_OUTPUT": str(output),
    }
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", str(script)],
        env=env, capture_output=True, text=True, timeout=hang(1800), check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    venv_python = tmp_path / "home" / "venv" / "bin" / "python"
    probe = [str(venv_python), "-c", "import greenloop, openai"]
    assert subprocess.run(probe, check=False, capture_output=True).returncode == 0

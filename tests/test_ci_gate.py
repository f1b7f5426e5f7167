"""Local green means CI green (issue 38): a repository whose detected gate is green while its CI
runs a freshness check that fails on the same tree; check says so, --stages-from ci/both are red
with that check's finding, and the loop with --stages-from both fixes it. Real git, real processes."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from limits import hang

PY = sys.executable
GENERATE = (
    "from calc import VERSION\nwith open('VERSION.txt', 'w') as f:\n    f.write(VERSION + '\\n')\n"
)
WORKFLOW = """name: CI
on: [pull_request]
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: pip install pytest
      - run: python -m pytest -q -p no:cacheprovider
      - name: generated files are fresh
        run: |
          python generate.py
          git diff --exit-code
      - run: twine upload dist/*
"""


@pytest.fixture
def stale(make_repo: Callable[..., Path]) -> Path:
    return make_repo(
        {
            "calc.py": "VERSION = '1.1'\n\n\ndef add(a, b):\n    return a + b\n",
            "test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
            "generate.py": GENERATE,
            "VERSION.txt": "1.0\n",  # the generator's output, not regenerated after the bump
            "pyproject.toml": "[project]\nname = 'calc'\nversion = '0'\n",
            ".gitignore": "__pycache__/\n",
            ".github/workflows/ci.yml": WORKFLOW,
        }
    )


def greenloop(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PY, "-m", "greenloop", "-C", str(root), *args],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=hang(900), check=False,
    )  # fmt: skip


def test_detect_lists_the_ci_stages_with_their_origin_cwd_and_skipped_steps(stale: Path) -> None:
    out = greenloop(stale, "detect", "--stages-from", "ci", "--format", "json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert [(s["name"], s["origin"], s["cwd"]) for s in data["stages"]] == [
        ("test", ".github/workflows/ci.yml:9", "."),
        ("fresh", ".github/workflows/ci.yml:13", "."),
    ]
    assert data["stages"][1]["command"] == "python generate.py && git diff --exit-code"
    reasons = {s["command"]: s["reason"] for s in data["skipped"]}
    assert reasons["twine upload dist/*"] == "uploads, publishes or deploys"
    assert reasons["pip install pytest"] == "installs tools or packages (set-up)"


def test_default_check_is_green_and_says_once_what_ci_also_runs(stale: Path) -> None:
    out = greenloop(stale, "check")
    assert out.returncode == 0, out.stdout + out.stderr
    lines = [line for line in out.stderr.splitlines() if "CI also runs" in line]
    assert lines == [
        "greenloop: CI also runs `python generate.py && git diff --exit-code` "
        "(.github/workflows/ci.yml:13); not run here (--stages-from both runs them too)"
    ]


@pytest.mark.parametrize("source", ["ci", "both"])
def test_the_ci_derived_gate_is_red_with_the_freshness_finding(stale: Path, source: str) -> None:
    out = greenloop(stale, "check", "--stages-from", source)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "VERSION.txt" in out.stdout
    assert "+1.1" in out.stdout
    assert "CI also runs" not in out.stderr


def test_the_loop_with_stages_from_both_fixes_what_only_ci_checks(
    stale: Path, tmp_path: Path
) -> None:
    steps = tmp_path / "steps.json"
    fix = {"write": "VERSION.txt", "text": "1.1\n"}
    steps.write_text(json.dumps([[fix]]))
    out = greenloop(stale, "run", "-y", "--stages-from", "both", "--agent", f"scripted:{steps}")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout.upper()
    assert (stale / "VERSION.txt").read_text() == "1.1\n"


PR_WORKFLOW = """name: CI
on: [pull_request]
jobs:
  freshness:
    name: generated files
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: |
          python generate.py
          git diff --exit-code
"""


@pytest.mark.parametrize("event", ["check_run", "pull_request"])
def test_pr_runs_the_failing_checks_ci_stages_first(tmp_path: Path, event: str) -> None:
    from github_server import github_server, pull_json
    from pr_fixtures import NUMBER, REPO, git, make_pr

    head = {
        "version.py": "VERSION = '1.1'\n",
        "generate.py": GENERATE.replace("from calc import", "from version import"),
        "VERSION.txt": "1.0\n",
        ".github/workflows/ci.yml": PR_WORKFLOW,
    }
    with github_server(REPO) as gh:
        pr = make_pr(tmp_path, gh, head)
        if event == "check_run":  # the job named in the workflow failed on the PR's head
            pull = pull_json(REPO, NUMBER, "feature", "main", pr.head_sha)
            run = {"name": "generated files", "conclusion": "failure", "pull_requests": [pull]}
            payload = {"action": "completed", "check_run": run}
            Path(pr.env["GITHUB_EVENT_PATH"]).write_text(json.dumps(payload))
        env = {**pr.env, "GITHUB_EVENT_NAME": event}
        fix = "printf '1.1\\n' > VERSION.txt; echo 'Summary: regenerated VERSION.txt'"
        done = subprocess.run(
            [PY, "-m", "greenloop", "pr", "--agent", fix, "--no-comment"],
            cwd=pr.checkout, env=env, capture_output=True, text=True,
            stdin=subprocess.DEVNULL, timeout=hang(900), check=False,
        )  # fmt: skip
        if event == "pull_request":  # nothing names the failing check: the local gate is green
            assert done.returncode == 0, done.stdout + done.stderr
            assert "the verifier is already green" in done.stdout
            assert git(pr.origin, "show", "feature:VERSION.txt") == "1.0"
            return
        assert done.returncode == 0, done.stdout + done.stderr
        assert "the failing check 'generated files' runs first" in done.stderr
        assert git(pr.origin, "show", "feature:VERSION.txt") == "1.1"


def test_a_malformed_workflow_exits_2_with_one_line_and_no_traceback(
    make_repo: Callable[..., Path],
) -> None:
    broken = "on: [pull_request]\njobs:\n  test:\n    steps: [\n      - run: pytest\n"
    root = make_repo({".github/workflows/ci.yml": broken, "a.py": ""})
    out = greenloop(root, "detect", "--stages-from", "ci")
    assert out.returncode == 2
    assert out.stderr.startswith("greenloop: malformed CI file .github/workflows/ci.yml:")
    assert out.stderr.count("\n") == 1
    assert "Traceback" not in out.stderr

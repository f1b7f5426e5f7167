"""action.yml run as the Actions runner runs a composite action: its ``run:`` steps through bash
with the runner's variables and files, on a real pull_request event payload, against a recording
GitHub server on 127.0.0.1, in a clone of a bare origin whose PR branch is red.

Only the two ``uses:`` steps are not run (setup-python, upload-artifact: they need GitHub's
services); their ``with:`` is asserted, and what the upload step would upload is read.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from action_runner import ActionRun, run_action
from github_server import TOKEN, GitHubState, github_server
from greenloop.pr.forge import COMMENT_MARKER
from pr_fixtures import BROKEN, CALC, git
from secret_shapes import SHAPES, leaks

ROOT = Path(__file__).resolve().parents[1]
EVENT = ROOT / "tests" / "resources" / "github_events" / "pull_request.labeled.json"
PAYLOAD = json.loads(EVENT.read_text())
REPO = PAYLOAD["repository"]["full_name"]  # Codertocat/Hello-World
NUMBER = PAYLOAD["number"]
HEAD, BASE = PAYLOAD["pull_request"]["head"]["ref"], PAYLOAD["pull_request"]["base"]["ref"]
AGENT_KEY = "agent-key-" + "5b0e7c1d9a3f4e62"  # no token shape: only its variable's name hides it
VERIFIER = f"{sys.executable} -m pytest -q -p no:cacheprovider test_calc.py"
# the agent fixes the bug, and prints what a careless agent prints: its key, the job's token and
# a token shape of each kind
NOISY_FIX = (
    'echo "agent: key=$ANTHROPIC_API_KEY token=$GITHUB_TOKEN"; '
    + "".join(f"echo '{line}'; " for line, _ in SHAPES[:3])
    + "sed -i 's/a - b/a + b/' calc.py; echo 'Summary: add adds again'"
)


def make_origin(tmp: Path) -> Path:
    """A bare origin: ``BASE`` green, ``HEAD`` one commit on it that breaks ``add``."""
    origin, seed = tmp / "origin.git", tmp / "seed"
    subprocess.run(["git", "init", "-q", "--bare", "-b", BASE, str(origin)], check=True)
    seed.mkdir()
    write(seed, CALC)
    git(seed, "init", "-q", "-b", BASE)
    git(seed, "add", "-A")
    dev_commit(seed, "initial")
    git(seed, "checkout", "-qb", HEAD)
    write(seed, BROKEN)
    dev_commit(seed, "subtract, by mistake")
    git(seed, "push", "-q", str(origin), BASE, HEAD)
    return origin


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).write_text(text)


def dev_commit(root: Path, message: str) -> None:
    git(root, "-c", "user.name=Dev", "-c", "user.email=dev@example.com", "commit", "-qam", message)


def run_job(job: Path, origin: Path, server: GitHubState) -> ActionRun:
    """One job on a fresh runner: actions/checkout's clone at the PR's branch, then the action."""
    runner_temp, workspace = job / "runner_temp", job / "workspace"
    runner_temp.mkdir(parents=True)
    git(job, "clone", "-q", "-b", HEAD, str(origin), "workspace")
    (job / "gitconfig").write_text("")  # the runner's own: no identity
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GIT_", "RUNNER_"))}
    env |= {
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(EVENT),
        "GITHUB_API_URL": server.url,
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_REF": f"refs/pull/{NUMBER}/merge",
        "GITHUB_HEAD_REF": HEAD,
        "GITHUB_BASE_REF": BASE,
        "GITHUB_RUN_ID": "4242",
        "GITHUB_RUN_ATTEMPT": "1",
        "RUNNER_TEMP": str(runner_temp),
        "RUNNER_OS": "Linux",
        "GIT_CONFIG_GLOBAL": str(job / "gitconfig"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "ANTHROPIC_API_KEY": AGENT_KEY,  # the workflow's `env:` on the step that uses the action
        # this venv's pytest plugins (ray, langsmith …) cost seconds per run; greenloop's own
        # plugin still loads (PYTEST_PLUGINS)
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }
    return run_action(
        ROOT,
        with_={"agent": NOISY_FIX, "verifier": VERIFIER, "greenloop-version": "path:."},
        env=env,
        github={"token": TOKEN, "repository": REPO, "event_name": "pull_request"},
        runner_temp=runner_temp,
        workspace=workspace,
        fake_outputs={"python": {"python-path": sys.executable, "python-version": "3.11"}},
    )


def assert_job_ran(run: ActionRun, job: Path) -> None:
    """What holds whatever the result: outputs, summary, the uses: steps' inputs, the artifact."""
    assert run.step("install").exit_code == 0, run.step("install").stderr
    assert Path(run.outputs["report"]).is_file()
    setup, upload = run.step("python"), run.steps[-1]
    assert setup.with_ == {"python-version": "3.12", "update-environment": "false"}
    assert upload.ran  # if: always(): also after a red run
    assert upload.uses == "actions/upload-artifact@v7"
    assert upload.with_ == {
        "name": "greenloop-report",
        "path": str(job / "runner_temp" / "greenloop" / "report.html"),
        "if-no-files-found": "ignore",
        "overwrite": "true",
    }
    assert Path(upload.with_["path"]).read_text().lstrip().lower().startswith("<!doctype html")
    assert "greenloop: " in run.summary  # the report as report --format md renders it


def everything_written(run: ActionRun, server: GitHubState) -> list[str]:
    """Every byte the job shows anyone: logs, outputs, the summary, the artifact, the report,
    and what reached GitHub (the comment, the check run)."""
    texts = [run.log, run.summary, *(s.output_file for s in run.steps)]
    texts += [
        Path(run.steps[-1].with_["path"]).read_text(),
        Path(run.outputs["report"]).read_text(),
    ]
    texts += [json.dumps(r.body) for r in server.requests if r.body is not None]
    return texts


def test_the_action_fixes_a_red_pr_and_a_rerun_edits_its_one_comment(tmp_path: Path) -> None:
    with github_server(REPO) as server:
        origin = make_origin(tmp_path)
        first = run_job(tmp_path / "job1", origin, server)
        assert_job_ran(first, tmp_path / "job1")
        assert first.step("run").exit_code == 0, first.log
        assert (first.outputs["result"], first.outputs["iterations"]) == ("success", "1")
        assert (first.outputs["action"], first.outputs["pull-url"]) == ("pushed", "")
        assert "## ✅ greenloop: success" in first.summary
        fixed = git(origin, "log", "-1", "--format=%s", f"refs/heads/{HEAD}")
        assert fixed.startswith("agent[iter 1/5]"), fixed
        assert "pushed 1 commit(s)" in first.log

        # the developer pushes a mistake the agent cannot fix; the job is re-run (same event,
        # a fresh runner): the step fails, the report is still uploaded, the comment edited
        dev = tmp_path / "dev"
        git(tmp_path, "clone", "-q", "-b", HEAD, str(origin), "dev")
        write(dev, {"calc.py": "def add(a, b):\n    return a * b\n"})
        dev_commit(dev, "multiply, by mistake")
        git(dev, "push", "-q", "origin", HEAD)
        theirs = git(origin, "rev-parse", f"refs/heads/{HEAD}")
        second = run_job(tmp_path / "job2", origin, server)
        assert_job_ran(second, tmp_path / "job2")
        assert second.step("run").exit_code == 1, second.log
        assert second.outputs["result"] not in ("", "success"), second.outputs
        assert int(second.outputs["iterations"]) >= 1
        assert git(origin, "rev-parse", f"refs/heads/{HEAD}") == theirs  # nothing pushed

        comments = server.comments[NUMBER]
        assert len(comments) == 1  # created once, edited in place: never a second comment
        assert len(server.calls("POST", rf"/issues/{NUMBER}/comments")) == 1
        edits = server.calls("PATCH", r"/issues/comments/")
        assert [e.path for e in edits] == [f"/repos/{REPO}/issues/comments/{comments[0]['id']}"]
        assert comments[0]["body"].startswith(COMMENT_MARKER)
        assert edits[0].body["body"] == comments[0]["body"]
        created = server.calls("POST", rf"/issues/{NUMBER}/comments")[0].body["body"]
        assert "## ✅ greenloop: success" in created
        assert "## ✅ greenloop: success" not in comments[0]["body"]  # the red run's report now
        assert f"greenloop: {second.outputs['result']}" in comments[0]["body"]
        assert all(r.headers["Authorization"] == f"Bearer {TOKEN}" for r in server.requests)

        for run in (first, second):
            for text in everything_written(run, server):
                assert TOKEN not in text
                assert AGENT_KEY not in text
                assert leaks(text) == []


def test_every_input_reaches_greenloop_pr_as_one_argument_never_as_script(tmp_path: Path) -> None:
    """The inputs map to flags, and a PR-controlled string (an agent or verifier with quotes and
    ``$(...)``) is one argv word: nothing of it runs as part of the step's script."""
    argv_file, pwned = tmp_path / "argv.json", tmp_path / "pwned"
    fake = tmp_path / "greenloop"
    fake.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        f"json.dump([os.getcwd(), os.environ['GITHUB_TOKEN'], *sys.argv[1:]], open({str(argv_file)!r}, 'w'))\n"
    )
    fake.chmod(0o755)
    (tmp_path / "workspace" / "app").mkdir(parents=True)
    agent = f'claude"; touch {pwned}; echo "$(touch {pwned})'
    verifier = f"pytest -x && echo `touch {pwned}`"
    inputs = {
        "agent": agent,
        "verifier": verifier,
        "mode": "pr",
        "base": "develop",
        "max-iters": "3",
        "max-time": "600",
        "max-cost-usd": "1.5",
        "max-tokens": "90000",
        "comment": "false",
        "working-directory": "app",
        "github-token": TOKEN,
    }
    (tmp_path / "runner_temp").mkdir()
    run = run_action(
        ROOT,
        with_=inputs,
        env={"PATH": os.environ["PATH"]},
        github={"token": "not-this-one"},
        runner_temp=tmp_path / "runner_temp",
        workspace=tmp_path / "workspace",
        fake_outputs={"python": {}, "install": {"bin": str(fake)}},
    )
    assert run.step("run").exit_code == 0, run.step("run").stderr
    cwd, token, *argv = json.loads(argv_file.read_text())
    assert cwd == str(tmp_path / "workspace" / "app")
    assert token == TOKEN  # the github-token input, not the default
    html = str(tmp_path / "runner_temp" / "greenloop" / "report.html")
    assert argv == [
        "pr", "--agent", agent, "--mode", "pr", "--forge", "github", "--html", html,
        "--base", "develop", "--max-iters", "3", "--max-time", "600", "--max-cost", "1.5",
        "--max-tokens", "90000", "--no-comment", "--", verifier,
    ]  # fmt: skip
    assert not pwned.exists()

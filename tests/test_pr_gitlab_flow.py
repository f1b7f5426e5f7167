"""``greenloop pr`` in a GitLab merge request pipeline: the real CLI, the variables GitLab CI sets,
a detached checkout of the MR's head as GitLab's runner makes it, a bare ``origin`` on disk and
the recording GitLab server on 127.0.0.1 (notes, commit statuses), bodies asserted."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from gitlab_server import GitLabServer
from greenloop.pr.forge import COMMENT_MARKER
from limits import hang
from pr_fixtures import BROKEN, CALC, FIX, VERIFY, git
from secret_shapes import leaks

TOKEN = "glpat-" + "Ab7Cd9Ef1Gh3Ij5Kl7Mn"
PROJECT, IID = 31, 12


def make_mr(tmp: Path) -> tuple[Path, Path]:
    """``main`` green, ``feature`` one red commit on it, pushed to a bare origin."""
    origin, seed = tmp / "origin.git", tmp / "seed"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    seed.mkdir()
    write(seed, CALC)
    git(seed, "init", "-q", "-b", "main")
    git(seed, "add", "-A")
    commit(seed, "initial")
    git(seed, "checkout", "-qb", "feature")
    write(seed, BROKEN)
    commit(seed, "subtract, by mistake")
    git(seed, "push", "-q", str(origin), "main", "feature")
    return origin, seed


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).write_text(text)


def commit(root: Path, message: str) -> None:
    git(root, "-c", "user.name=Dev", "-c", "user.email=dev@example.com", "commit", "-qam", message)


def job(
    tmp: Path, name: str, origin: Path, server: GitLabServer, *flags: str
) -> subprocess.CompletedProcess[str]:
    """One merge request pipeline job: GitLab's runner fetches and checks out the head detached."""
    checkout = tmp / name
    git(tmp, "clone", "-q", str(origin), name)
    sha = git(checkout, "rev-parse", "origin/feature")
    git(checkout, "checkout", "-q", "--detach", sha)
    (tmp / "gitconfig").write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GIT_", "CI"))}
    env |= {
        "CI": "true",
        "GITLAB_CI": "true",
        "CI_API_V4_URL": server.api_url,
        "CI_SERVER_URL": "https://gitlab.example",
        "CI_PROJECT_ID": str(PROJECT),
        "CI_PROJECT_PATH": "acme/calc",
        "CI_PROJECT_URL": "https://gitlab.example/acme/calc",
        "CI_PIPELINE_SOURCE": "merge_request_event",
        "CI_COMMIT_SHA": sha,
        "CI_JOB_URL": "https://gitlab.example/acme/calc/-/jobs/900",
        "CI_JOB_TOKEN": "job-token-" + "0f9e8d7c6b5a",
        "CI_MERGE_REQUEST_IID": str(IID),
        "CI_MERGE_REQUEST_PROJECT_ID": str(PROJECT),
        "CI_MERGE_REQUEST_PROJECT_PATH": "acme/calc",
        "CI_MERGE_REQUEST_PROJECT_URL": "https://gitlab.example/acme/calc",
        "CI_MERGE_REQUEST_SOURCE_PROJECT_ID": str(PROJECT),
        "CI_MERGE_REQUEST_SOURCE_PROJECT_PATH": "acme/calc",
        "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME": "feature",
        "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main",
        "GITLAB_TOKEN": TOKEN,
        "GIT_CONFIG_GLOBAL": str(tmp / "gitconfig"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",  # this venv's plugins cost seconds per pytest run
    }
    return subprocess.run(
        [sys.executable, "-m", "greenloop", "pr", "--agent", FIX, *flags, "--", *VERIFY],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=hang(240),
        check=False,
    )


def test_a_red_merge_request_is_fixed_and_its_one_note_edited_on_the_next_pipeline(
    tmp_path: Path,
) -> None:
    with GitLabServer(token=TOKEN) as server:
        server.add_project(PROJECT, "acme/calc")
        server.add_note(PROJECT, IID, "please fix the build")
        origin, seed = make_mr(tmp_path)

        first = job(tmp_path, "job1", origin, server)  # no --forge: GITLAB_CI=true picks GitLab

        assert first.returncode == 0, first.stderr
        assert git(origin, "log", "-1", "--format=%s", "feature") == "agent[iter 1/5]: add adds"
        notes_path = f"/api/v4/projects/{PROJECT}/merge_requests/{IID}/notes"
        (created,) = [w for w in server.writes() if w.path == notes_path]
        assert created.method == "POST"
        assert created.body["body"].startswith(COMMENT_MARKER)
        assert "pushed 1 commit(s) to `feature`" in created.body["body"]
        assert "## ✅ greenloop: success" in created.body["body"]
        (status,) = [w for w in server.writes() if "/statuses/" in w.path]
        pushed = git(origin, "rev-parse", "feature")
        assert status.path == f"/api/v4/projects/{PROJECT}/statuses/{pushed}"
        assert status.body["state"] == "success"
        assert status.body["target_url"] == "https://gitlab.example/acme/calc/-/jobs/900"
        assert all(r.headers.get("private-token") == TOKEN for r in server.requests)

        # the developer pushes another mistake: the next pipeline's job edits the same note
        git(seed, "pull", "-q", str(origin), "feature")
        write(seed, BROKEN)
        commit(seed, "subtract again")
        git(seed, "push", "-q", str(origin), "feature")
        server.requests.clear()

        second = job(tmp_path, "job2", origin, server)

        assert second.returncode == 0, second.stderr
        edits = [w for w in server.writes() if w.path.startswith(notes_path)]
        note_id = server.projects[PROJECT].notes[IID][1]["id"]
        assert [(e.method, e.path) for e in edits] == [("PUT", f"{notes_path}/{note_id}")]
        bodies = [n["body"] for n in server.projects[PROJECT].notes[IID]]
        assert len(bodies) == 2  # the reviewer's and greenloop's one
        assert bodies[1] == edits[0].body["body"] != created.body["body"]
        for text in (first.stdout, first.stderr, second.stdout, second.stderr, *bodies):
            assert TOKEN not in text
            assert leaks(text) == []


def test_mode_pr_on_gitlab_opens_one_merge_request_into_the_mr_branch(tmp_path: Path) -> None:
    with GitLabServer(token=TOKEN) as server:
        server.add_project(PROJECT, "acme/calc")
        origin, _ = make_mr(tmp_path)
        before = git(origin, "rev-parse", "feature")

        done = job(tmp_path, "job", origin, server, "--forge", "gitlab", "--mode", "pr")

        assert done.returncode == 0, done.stderr
        assert git(origin, "rev-parse", "feature") == before  # the MR's own branch untouched
        (opened,) = [w for w in server.writes() if w.path.endswith("/merge_requests")]
        assert opened.path == f"/api/v4/projects/{PROJECT}/merge_requests"
        source = opened.body["source_branch"]
        assert source.startswith(f"greenloop/fix-{IID}-")
        assert opened.body["target_branch"] == "feature"
        assert git(origin, "log", "-1", "--format=%s", source) == "agent[iter 1/5]: add adds"
        assert "## ✅ greenloop: success" in opened.body["description"]
        (note,) = server.projects[PROJECT].notes[IID]
        assert "https://gitlab.example/acme/calc/-/merge_requests/1" in note["body"]

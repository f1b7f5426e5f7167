"""The GitLab forge client against a real HTTP server on 127.0.0.1 that records every request."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gitlab_server import BOT_USERNAME, GitLabServer
from greenloop.errors import FatalError
from greenloop.pr import gitlab
from greenloop.pr.forge import COMMENT_MARKER, ForgeError
from secret_shapes import SHAPES, leaks

TOKEN = "glpat-" + "Zq81xLm3Rt5Vw7Yb9Nc2"  # a GitLab token's shape, built so no scanner flags it
JOB_TOKEN = "job-" + "6f1c93b2a4d8e07f5c1b"
PROJECT, FORK = 4242, 5151


@pytest.fixture
def server() -> Iterator[GitLabServer]:
    with GitLabServer(token=TOKEN, job_token=JOB_TOKEN) as gl:
        gl.add_project(PROJECT, "acme/calc")
        gl.add_project(FORK, "someone/calc")
        yield gl


def client(env: dict[str, str]) -> gitlab.GitLabForge:
    forge = gitlab.client_from_env(env)[1]
    assert forge is not None
    return forge


def ci_env(server: GitLabServer, **extra: str) -> dict[str, str]:
    """The variables GitLab CI sets in a merge_request_event pipeline (its documented names)."""
    return {
        "GITLAB_CI": "true",
        "CI_API_V4_URL": server.api_url,
        "CI_PROJECT_ID": str(PROJECT),
        "CI_PROJECT_PATH": "acme/calc",
        "CI_PROJECT_URL": "https://gitlab.example/acme/calc",
        "CI_PIPELINE_SOURCE": "merge_request_event",
        "CI_COMMIT_SHA": "0123456789abcdef0123456789abcdef01234567",
        "CI_JOB_URL": "https://gitlab.example/acme/calc/-/jobs/77",
        "CI_MERGE_REQUEST_IID": "7",
        "CI_MERGE_REQUEST_PROJECT_ID": str(PROJECT),
        "CI_MERGE_REQUEST_PROJECT_PATH": "acme/calc",
        "CI_MERGE_REQUEST_PROJECT_URL": "https://gitlab.example/acme/calc",
        "CI_MERGE_REQUEST_SOURCE_PROJECT_ID": str(PROJECT),
        "CI_MERGE_REQUEST_SOURCE_PROJECT_PATH": "acme/calc",
        "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME": "feature",
        "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main",
        "GITLAB_TOKEN": TOKEN,
        **extra,
    }


def test_gitlab_comment_is_created_once_then_edited_in_place(server: GitLabServer) -> None:
    server.add_note(PROJECT, 7, "LGTM, but CI is red")
    forge = client(ci_env(server))
    first = forge.upsert_comment(f"{COMMENT_MARKER}\n### greenloop: 2 failing")
    second = forge.upsert_comment(f"{COMMENT_MARKER}\n### greenloop: fixed")

    writes = server.writes()
    assert [(w.method, w.path) for w in writes] == [
        ("POST", f"/api/v4/projects/{PROJECT}/merge_requests/7/notes"),
        ("PUT", f"/api/v4/projects/{PROJECT}/merge_requests/7/notes/{first.id}"),
    ]
    assert writes[0].body == {"body": f"{COMMENT_MARKER}\n### greenloop: 2 failing"}
    assert writes[1].body == {"body": f"{COMMENT_MARKER}\n### greenloop: fixed"}
    assert second.id == first.id
    assert second.url == f"https://gitlab.example/acme/calc/-/merge_requests/7#note_{first.id}"
    notes = server.projects[PROJECT].notes[7]
    assert [n["body"] for n in notes] == [
        "LGTM, but CI is red",
        f"{COMMENT_MARKER}\n### greenloop: fixed",
    ]
    assert all(r.headers["private-token"] == TOKEN for r in server.requests)
    assert all("job-token" not in r.headers for r in server.requests)


def test_gitlab_comment_is_found_past_the_first_page_and_never_in_a_system_note(
    server: GitLabServer,
) -> None:
    server.per_page_cap = 2  # GitLab caps per_page (at 100); a small cap makes three pages here
    server.add_note(PROJECT, 7, f"quoted: {COMMENT_MARKER}", system=True)
    for n in range(3):
        server.add_note(PROJECT, 7, f"review {n}")
    ours = server.add_note(PROJECT, 7, f"{COMMENT_MARKER}\nold report", author=BOT_USERNAME)
    forge = client(ci_env(server))

    found = forge.find_comment()
    assert found is not None
    assert found.id == str(ours)
    listed = [r for r in server.requests if r.method == "GET" and r.path.endswith("/notes")]
    assert [r.query["page"] for r in listed] == ["1", "2", "3"]
    assert {r.query["sort"] for r in listed} == {"asc"}

    forge.upsert_comment("new report")  # the marker is put first when the body lacks it
    assert server.writes()[-1].path.endswith(f"/notes/{ours}")
    assert server.writes()[-1].body == {"body": f"{COMMENT_MARKER}\nnew report"}


def test_a_gitlab_note_by_someone_else_carrying_the_marker_is_never_edited(
    server: GitLabServer,
) -> None:
    forged = server.add_note(PROJECT, 7, f"{COMMENT_MARKER}\nnot greenloop's", author="mallory")
    forge = client(ci_env(server))

    assert forge.find_comment() is None
    assert forge.ignored == [f"note {forged} by mallory"]
    forge.upsert_comment("the report")
    (write,) = server.writes()
    assert write.method == "POST"  # a note of its own, mallory's untouched
    assert forge.find_comment() is not None


def test_gitlab_note_bodies_are_redacted_before_they_are_sent(server: GitLabServer) -> None:
    forge = client(ci_env(server))
    lines = "\n".join(line for line, _ in SHAPES[:-1])  # the last needs a project's own pattern
    forge.upsert_comment(f"{COMMENT_MARKER}\n{lines}\nthe token: {TOKEN}")
    sent = server.writes()[0].body["body"]
    assert leaks(sent) == []
    assert TOKEN not in sent
    assert sent.startswith(COMMENT_MARKER)


def test_gitlab_opens_a_merge_request_and_a_rerun_gets_the_open_one(server: GitLabServer) -> None:
    forge = client(ci_env(server))
    args = {
        "head": "greenloop/fix-7",
        "base": "feature",
        "title": "fix: make CI green",
        "body": "2 → 0",
    }
    opened = forge.open_pull(**args)
    again = forge.open_pull(**args)

    post = server.writes()[0]
    assert post.path == f"/api/v4/projects/{PROJECT}/merge_requests"
    assert post.body == {
        "source_branch": "greenloop/fix-7",
        "target_branch": "feature",
        "title": "fix: make CI green",
        "description": "2 → 0",
        "remove_source_branch": True,
    }
    assert (opened.number, opened.head_ref, opened.base_ref) == (1, "greenloop/fix-7", "feature")
    assert opened.url == "https://gitlab.example/acme/calc/-/merge_requests/1"
    assert again == opened
    assert len(server.projects[PROJECT].merge_requests) == 1
    lookup = [r for r in server.requests if r.method == "GET"][-1]
    assert lookup.query == {
        "source_branch": "greenloop/fix-7",
        "target_branch": "feature",
        "state": "opened",
    }


def test_gitlab_check_is_a_commit_status_on_the_head(server: GitLabServer) -> None:
    forge = client(ci_env(server))
    sha = "0123456789abcdef0123456789abcdef01234567"
    url = forge.publish_check(sha=sha, conclusion="failure", title="2 failing", summary="...")
    forge.publish_check(sha=sha, conclusion="success", title="x" * 300, summary="")
    forge.publish_check(sha=sha, conclusion="neutral", title="nothing to fix", summary="")

    bodies = [w.body for w in server.writes()]
    assert all(w.path == f"/api/v4/projects/{PROJECT}/statuses/{sha}" for w in server.writes())
    assert bodies[0] == {
        "state": "failed",
        "name": "greenloop",
        "description": "2 failing",
        "target_url": "https://gitlab.example/acme/calc/-/jobs/77",
    }
    assert [b["state"] for b in bodies] == ["failed", "success", "skipped"]
    assert len(bodies[1]["description"]) == 255  # GitLab's limit on a status's description
    assert url == "https://gitlab.example/acme/calc/-/jobs/77"


def test_gitlab_job_token_refused_on_notes_names_the_fix_and_not_the_token(
    server: GitLabServer,
) -> None:
    env = ci_env(server, CI_JOB_TOKEN=JOB_TOKEN)
    del env["GITLAB_TOKEN"]
    forge = client(env)
    with pytest.raises(ForgeError) as refused:
        forge.upsert_comment(f"{COMMENT_MARKER}\nreport")
    message = str(refused.value)
    assert "HTTP 401" in message
    assert "GITLAB_TOKEN" in message
    assert JOB_TOKEN not in message
    assert server.requests[0].headers["job-token"] == JOB_TOKEN
    assert "private-token" not in server.requests[0].headers


def test_gitlab_context_of_a_fork_merge_request_in_the_parent_project(server: GitLabServer) -> None:
    env = ci_env(
        server,
        CI_MERGE_REQUEST_SOURCE_PROJECT_ID=str(FORK),
        CI_MERGE_REQUEST_SOURCE_PROJECT_PATH="someone/calc",
        CI_MERGE_REQUEST_SOURCE_BRANCH_SHA="fedcba9876543210fedcba9876543210fedcba98",
    )
    context = gitlab.context_from_env(env)
    assert context.fork is True
    assert (context.repo, context.head_repo) == ("acme/calc", "someone/calc")
    assert (context.number, context.head_ref, context.base_ref) == (7, "feature", "main")
    assert context.head_sha == "fedcba9876543210fedcba9876543210fedcba98"  # merged results
    assert context.url == "https://gitlab.example/acme/calc/-/merge_requests/7"
    assert context.event == "merge_request_event"
    same = gitlab.context_from_env(ci_env(server))
    assert same.fork is False
    assert same.head_sha == "0123456789abcdef0123456789abcdef01234567"


def test_gitlab_forge_outside_a_merge_request_pipeline_says_what_is_missing(
    server: GitLabServer,
) -> None:
    env = ci_env(server)
    del env["CI_MERGE_REQUEST_IID"]
    with pytest.raises(FatalError, match="merge_request_event"):
        gitlab.client_from_env(env)
    env = ci_env(server)
    del env["GITLAB_TOKEN"]
    with pytest.raises(FatalError, match="GITLAB_TOKEN"):
        gitlab.client_from_env(env)
    context, forge = gitlab.client_from_env(env, base="release", need_token=False)
    assert forge is None  # --mode push --no-comment needs no API
    assert (context.head_ref, context.base_ref) == ("feature", "release")
    assert gitlab.detect({"GITLAB_CI": "true"}) is True
    assert gitlab.detect({"GITHUB_ACTIONS": "true"}) is False
    assert server.requests == []

"""``forge.Forge`` over GitLab's REST API (v4), for a merge request pipeline.

Everything comes from the variables GitLab CI sets in a ``merge_request_event`` pipeline
(``CI_API_V4_URL``, ``CI_PROJECT_ID``, ``CI_MERGE_REQUEST_IID`` …). The token is ``GITLAB_TOKEN``
(sent as ``PRIVATE-TOKEN``: a project access token with the ``api`` scope), else ``CI_JOB_TOKEN``
(``JOB-TOKEN``), which GitLab does not let post merge request notes: a refusal then says so.
Every body sent has passed ``redact``; so has every error message.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import replace

from greenloop.errors import FatalError
from greenloop.pr.forge import (
    COMMENT_MARKER,
    Annotation,
    Comment,
    ForgeError,
    PrContext,
    PullRequest,
)
from greenloop.redact import redact

TIMEOUT = 30.0
PER_PAGE = 100
MAX_PAGES = 50  # 5,000 notes: a bound on the search, not a limit any real MR reaches
STATUS_NAME = "greenloop"
# GitHub's check conclusions -> GitLab's commit status states
STATES = {"success": "success", "failure": "failed", "neutral": "skipped"}
JOB_TOKEN_HINT = (
    "CI_JOB_TOKEN may not post merge request notes or open merge requests: set GITLAB_TOKEN to "
    "a project access token with the api scope (a masked CI/CD variable)"
)


def detect(environ: Mapping[str, str] = os.environ) -> bool:
    """True inside a GitLab CI job (``--forge auto``)."""
    return environ.get("GITLAB_CI") == "true"


def context_from_env(environ: Mapping[str, str] = os.environ) -> PrContext:
    """The merge request a ``merge_request_event`` pipeline runs for."""
    iid = environ.get("CI_MERGE_REQUEST_IID", "")
    if not iid.isdigit():
        raise ForgeError(
            "not a merge request pipeline (CI_MERGE_REQUEST_IID is not set): run the job with "
            "rules: - if: $CI_PIPELINE_SOURCE == 'merge_request_event'"
        )
    project_id = environ.get("CI_PROJECT_ID", "")
    source_id = environ.get("CI_MERGE_REQUEST_SOURCE_PROJECT_ID", project_id)
    repo = environ.get("CI_MERGE_REQUEST_PROJECT_PATH") or environ.get("CI_PROJECT_PATH", "")
    project_url = environ.get("CI_MERGE_REQUEST_PROJECT_URL") or environ.get("CI_PROJECT_URL", "")
    return PrContext(
        repo=repo,
        number=int(iid),
        head_ref=environ.get("CI_MERGE_REQUEST_SOURCE_BRANCH_NAME", ""),
        base_ref=environ.get("CI_MERGE_REQUEST_TARGET_BRANCH_NAME", ""),
        head_repo=environ.get("CI_MERGE_REQUEST_SOURCE_PROJECT_PATH", repo),
        # a merged-results pipeline's CI_COMMIT_SHA is the merge commit, not the MR's head
        head_sha=environ.get("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA")
        or environ.get("CI_COMMIT_SHA", ""),
        # the job's token belongs to the project the pipeline runs in: it cannot push elsewhere
        fork=bool(source_id) and source_id != project_id,
        url=f"{project_url}/-/merge_requests/{iid}" if project_url else "",
        event=environ.get("CI_PIPELINE_SOURCE", "merge_request_event"),
    )


def client_from_env(
    environ: Mapping[str, str] = os.environ, *, base: str | None = None, need_token: bool = True
) -> tuple[PrContext, GitLabForge | None]:
    """The merge request this job is about, and a client when there is a token."""
    api = environ.get("CI_API_V4_URL", "")
    if not api:
        raise FatalError("CI_API_V4_URL is not set (--forge gitlab): run inside a GitLab CI job")
    try:
        context = context_from_env(environ)
    except ForgeError as exc:
        raise FatalError(str(exc)) from None
    if base:
        context = replace(context, base_ref=base)
    auth = _auth(environ)
    if auth is None:
        if need_token:
            raise FatalError(
                "GITLAB_TOKEN is not set: the note and a fix MR need a project access token "
                "with the api scope (a masked CI/CD variable), or pass --no-comment with --mode push"
            )
        return context, None
    client = GitLabForge(
        context=context,
        api_url=api,
        mr_project=environ.get("CI_MERGE_REQUEST_PROJECT_ID") or environ.get("CI_PROJECT_ID", ""),
        project=environ.get("CI_PROJECT_ID", ""),
        auth=auth,
        job_url=environ.get("CI_JOB_URL", ""),
    )
    return context, client


def _auth(environ: Mapping[str, str]) -> tuple[str, str] | None:
    if environ.get("GITLAB_TOKEN"):
        return "PRIVATE-TOKEN", environ["GITLAB_TOKEN"]
    if environ.get("CI_JOB_TOKEN"):
        return "JOB-TOKEN", environ["CI_JOB_TOKEN"]
    return None


class GitLabForge:
    """One merge request's notes, merge requests and commit statuses over REST v4."""

    name = "gitlab"

    def __init__(
        self,
        *,
        context: PrContext,
        api_url: str,
        mr_project: str,
        project: str,
        auth: tuple[str, str],
        job_url: str = "",
    ) -> None:
        self.context = context
        self._api = api_url.rstrip("/")
        self._mr_project = urllib.parse.quote(mr_project, safe="")
        self._project = urllib.parse.quote(project or mr_project, safe="")
        self._auth = auth
        self._job_url = job_url
        self._username: str | None = None
        self.ignored: list[str] = []
        """Notes that carry greenloop's marker but are not greenloop's own (issue 39)."""

    # ---- the Protocol ----

    def find_comment(self, marker: str = COMMENT_MARKER) -> Comment | None:
        """greenloop's own note: the marker AND the token's user as its author; anyone else's
        note carrying the marker is ignored, never edited, and listed in ``ignored``."""
        path = f"{self._notes_path()}?sort=asc&order_by=created_at&per_page={PER_PAGE}"
        me = self.identity()
        for note in self._pages(path):
            body = str(note.get("body") or "")
            if marker not in body or note.get("system"):
                continue
            author = note.get("author")
            username = str(author.get("username") or "") if isinstance(author, dict) else ""
            if me and username == me:
                return self._comment(note)
            self.ignored.append(f"note {note.get('id')} by {username or 'an unknown author'}")
        return None

    def identity(self) -> str:
        """The username the token writes notes as (``GET /user``: a personal, project or group
        access token's user, its bot for the latter two); "" when GitLab will not say."""
        if self._username is None:
            try:
                user = self._call("GET", "/user")
            except ForgeError:
                user = None
            self._username = str(user.get("username") or "") if isinstance(user, dict) else ""
        return self._username

    def upsert_comment(self, body: str, marker: str = COMMENT_MARKER) -> Comment:
        if marker not in body:  # without it no later run finds the note again
            body = f"{marker}\n{body}"
        found = self.find_comment(marker)
        if found is None:
            note = self._call("POST", self._notes_path(), {"body": redact(body)})
        else:
            note = self._call("PUT", f"{self._notes_path()}/{found.id}", {"body": redact(body)})
        return self._comment(_object(note))

    def open_pull(self, *, head: str, base: str, title: str, body: str) -> PullRequest:
        fields = {
            "source_branch": head,
            "target_branch": base,
            "title": redact(title),
            "description": redact(body),
            "remove_source_branch": True,
        }
        try:
            mr = _object(self._call("POST", f"/projects/{self._project}/merge_requests", fields))
        except _Conflict:  # one is open already for this branch pair (a re-run): that one
            mr = self._open_merge_request(head, base)
        return PullRequest(
            number=int(str(mr["iid"])),
            url=str(mr.get("web_url", "")),
            head_ref=str(mr.get("source_branch", head)),
            base_ref=str(mr.get("target_branch", base)),
        )

    def publish_check(
        self,
        *,
        sha: str,
        conclusion: str,
        title: str,
        summary: str,
        annotations: Sequence[Annotation] = (),
    ) -> str:
        # A commit status has a state and one line; the summary and the failures' places are in
        # the note (GitLab shows file annotations only from a Code Quality report artifact).
        fields = {
            "state": STATES.get(conclusion, "failed"),
            "name": STATUS_NAME,
            "description": redact(title)[:255],
        }
        if self._job_url:
            fields["target_url"] = self._job_url
        status = _object(self._call("POST", f"/projects/{self._project}/statuses/{sha}", fields))
        return str(status.get("target_url") or "")

    # ---- HTTP ----

    def _notes_path(self) -> str:
        return f"/projects/{self._mr_project}/merge_requests/{self.context.number}/notes"

    def _comment(self, note: Mapping[str, object]) -> Comment:
        url = f"{self.context.url}#note_{note['id']}" if self.context.url else ""
        return Comment(id=str(note["id"]), body=str(note.get("body") or ""), url=url)

    def _open_merge_request(self, head: str, base: str) -> dict[str, object]:
        query = urllib.parse.urlencode(
            {"source_branch": head, "target_branch": base, "state": "opened"}
        )
        found = self._call("GET", f"/projects/{self._project}/merge_requests?{query}")
        if not isinstance(found, list) or not found:
            raise ForgeError(
                f"GitLab refused the merge request {head} -> {base} (409) and has none open"
            )
        return _object(found[0])

    def _pages(self, path: str) -> list[dict[str, object]]:
        items: list[dict[str, object]] = []
        page = "1"
        for _ in range(MAX_PAGES):
            data, headers = self._send("GET", f"{path}&page={page}", None)
            items += [_object(item) for item in data] if isinstance(data, list) else []
            page = headers.get("X-Next-Page", "")
            if not page:
                break
        return items

    def _call(self, method: str, path: str, fields: Mapping[str, object] | None = None) -> object:
        return self._send(method, path, fields)[0]

    def _send(
        self, method: str, path: str, fields: Mapping[str, object] | None
    ) -> tuple[object, Mapping[str, str]]:
        data = None if fields is None else json.dumps(fields).encode()
        request = urllib.request.Request(self._api + path, data=data, method=method)
        request.add_header(*self._auth)
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
                text = response.read().decode("utf-8", "replace")
                return (json.loads(text) if text.strip() else None), response.headers
        except urllib.error.HTTPError as exc:
            raise self._refusal(method, path, exc) from None
        except (OSError, ValueError) as exc:
            raise ForgeError(redact(f"{_where(method, path)}: {exc}")) from None

    def _refusal(self, method: str, path: str, exc: urllib.error.HTTPError) -> ForgeError:
        detail = exc.read().decode("utf-8", "replace")[:500].strip()
        where = f"{_where(method, path)}: HTTP {exc.code}"
        if exc.code == 409:
            return _Conflict(redact(f"{where} {detail}"))
        hint = (
            f" ({JOB_TOKEN_HINT})"
            if exc.code in (401, 403) and self._auth[0] == "JOB-TOKEN"
            else ""
        )
        return ForgeError(redact(f"{where} {detail}{hint}"))


class _Conflict(ForgeError):
    """HTTP 409: what was asked for exists already."""


def _where(method: str, path: str) -> str:
    return f"GitLab {method} {path.partition('?')[0]}"


def _object(value: object) -> dict[str, object]:
    if not isinstance(value, dict):
        raise ForgeError(f"GitLab answered {type(value).__name__} where an object was expected")
    return value

"""GitHub's REST API for ``greenloop pr``: the pull request, one marked comment, a fix PR, a
check run. urllib from the standard library; only the endpoints the flow uses.

The context comes from what Actions sets: ``GITHUB_REPOSITORY``, the event payload at
``GITHUB_EVENT_PATH`` (``pull_request``/``pull_request_target``, ``check_run``/``check_suite``,
``workflow_run``, ``issue_comment``/``issues`` on a pull request), ``GITHUB_HEAD_REF`` and
``GITHUB_BASE_REF``; the API at ``GITHUB_API_URL`` (default https://api.github.com); the token in
``GITHUB_TOKEN``. Every body sent and every error message passes ``redact``.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from greenloop import __version__
from greenloop.errors import FatalError
from greenloop.pr.forge import (
    COMMENT_MARKER,
    Annotation,
    Comment,
    ForgeError,
    PrContext,
    PullRequest,
)
from greenloop.redact import add_patterns, redact, redact_data

DEFAULT_API = "https://api.github.com"
TIMEOUT_S = 30.0
PAGE_SIZE = 100
MAX_PAGES = 50  # 5,000 comments: a bound, not a limit anyone meets
MAX_ANNOTATIONS = 50  # GitHub takes at most 50 per request
MAX_BODY = 65_000  # a comment's body is capped at 65,536 characters
CHECK_NAME = "greenloop"
ACTIONS_BOT = "github-actions[bot]"
"""Who Actions' GITHUB_TOKEN writes as (an installation token: ``GET /user`` refuses it)."""
PR_EVENTS = ("pull_request", "pull_request_target")


class GitHub:
    """The ``Forge`` of one pull request on GitHub."""

    name = "github"

    def __init__(
        self,
        context: PrContext,
        *,
        token: str,
        api_url: str = DEFAULT_API,
        environ: Mapping[str, str] = os.environ,
    ) -> None:
        self.context = context
        self._token = token
        self._api = api_url.rstrip("/")
        self._environ = environ
        self._login: str | None = None
        self.ignored: list[str] = []
        """Comments that carry greenloop's marker but are not greenloop's own (issue 39)."""

    # ---- the Forge protocol

    def find_comment(self, marker: str = COMMENT_MARKER) -> Comment | None:
        """greenloop's own comment: the marker AND the token's author; a marker in anyone
        else's comment (copied, or forged) is ignored, never edited, and listed in ``ignored``."""
        path = f"/repos/{self.context.repo}/issues/{self.context.number}/comments"
        me = self.identity()
        for item in self._pages(path):
            if marker not in str(item.get("body") or ""):
                continue
            author = str((item.get("user") or {}).get("login") or "")
            if me and author == me:
                return _comment(item)
            self.ignored.append(f"comment {item.get('id')} by {author or 'an unknown author'}")
        return None

    def identity(self) -> str:
        """The login the token writes comments as: ``GREENLOOP_COMMENT_LOGIN``, else ``GET /user``
        (a personal or fine-grained token), else, for an installation token in an Actions job
        (``GET /user`` refuses those), ``github-actions[bot]``; "" when unknown (then no comment
        is taken as greenloop's own: a new one is written)."""
        if self._login is None:
            self._login = self._environ.get("GREENLOOP_COMMENT_LOGIN") or self._user_login()
        return self._login

    def _user_login(self) -> str:
        try:
            data, _ = self._request("GET", "/user")
        except ForgeError:
            return ACTIONS_BOT if self._environ.get("GITHUB_ACTIONS") == "true" else ""
        return str(data.get("login") or "") if isinstance(data, dict) else ""

    def upsert_comment(self, body: str, marker: str = COMMENT_MARKER) -> Comment:
        if marker not in body:
            body = f"{marker}\n{body}"
        body = _capped(body)
        found = self.find_comment(marker)
        if found is not None:
            path = f"/repos/{self.context.repo}/issues/comments/{found.id}"
            return _comment(self._request("PATCH", path, {"body": body})[0])
        path = f"/repos/{self.context.repo}/issues/{self.context.number}/comments"
        return _comment(self._request("POST", path, {"body": body})[0])

    def open_pull(self, *, head: str, base: str, title: str, body: str) -> PullRequest:
        data = {"title": title, "head": head, "base": base, "body": _capped(body)}
        made = self._request("POST", f"/repos/{self.context.repo}/pulls", data)[0]
        return PullRequest(
            number=int(made["number"]),
            url=str(made.get("html_url") or ""),
            head_ref=str(made.get("head", {}).get("ref") or head),
            base_ref=str(made.get("base", {}).get("ref") or base),
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
        output: dict[str, Any] = {"title": title, "summary": _capped(summary)}
        if annotations:
            output["annotations"] = [_annotation(a) for a in annotations[:MAX_ANNOTATIONS]]
        data = {
            "name": CHECK_NAME,
            "head_sha": sha,
            "status": "completed",
            "conclusion": conclusion,
            "output": output,
        }
        made = self._request("POST", f"/repos/{self.context.repo}/check-runs", data)[0]
        return str(made.get("html_url") or "")

    # ---- what the context needs when the event does not say it all

    def pull(self, number: int) -> dict[str, Any]:
        found: dict[str, Any] = self._request("GET", f"/repos/{self.context.repo}/pulls/{number}")[
            0
        ]
        return found

    def pull_for_branch(self, owner: str, branch: str) -> dict[str, Any] | None:
        query = urllib.parse.urlencode({"state": "open", "head": f"{owner}:{branch}"})
        found = self._request("GET", f"/repos/{self.context.repo}/pulls?{query}")[0]
        return found[0] if isinstance(found, list) and found else None

    # ---- HTTP

    def _pages(self, path: str) -> list[dict[str, Any]]:
        url: str | None = f"{self._api}{path}?per_page={PAGE_SIZE}"
        items: list[dict[str, Any]] = []
        for _ in range(MAX_PAGES):
            if url is None:
                break
            data, headers = self._request("GET", url)
            items += data if isinstance(data, list) else []
            url = _next_link(headers.get("Link", ""), self._api)
        return items

    def _request(
        self, method: str, path: str, body: Mapping[str, Any] | None = None
    ) -> tuple[Any, Mapping[str, str]]:
        url = path if path.startswith(self._api) else f"{self._api}{path}"
        data = json.dumps(redact_data(body)).encode() if body is not None else None
        request = urllib.request.Request(url, data=data, method=method, headers=self._headers())
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
                raw = response.read()
                headers = dict(response.headers.items())
        except urllib.error.HTTPError as exc:
            detail = _message(exc.read())
            raise ForgeError(redact(f"GitHub {method} {path}: HTTP {exc.code}{detail}")) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ForgeError(redact(f"GitHub {method} {path}: {reason}")) from None
        return (json.loads(raw) if raw.strip() else {}), headers

    def _headers(self) -> dict[str, str]:
        return {
            "Accept": "application/vnd.github+json",
            "Authorization": f"Bearer {self._token}",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": f"greenloop/{__version__}",
            "Content-Type": "application/json",
        }


def _comment(item: Mapping[str, Any]) -> Comment:
    return Comment(
        id=str(item["id"]), body=str(item.get("body") or ""), url=str(item.get("html_url") or "")
    )


def _annotation(a: Annotation) -> dict[str, Any]:
    return {
        "path": a.path,
        "start_line": a.line,
        "end_line": a.line,
        "annotation_level": a.level,
        "message": a.message[:4000],
        "title": a.title[:250],
    }


def _capped(body: str) -> str:
    if len(body) <= MAX_BODY:
        return body
    return body[: MAX_BODY - 40] + "\n\n… (cut at GitHub's comment size)\n"


def _message(raw: bytes) -> str:
    try:
        data = json.loads(raw)
    except ValueError:
        return ""
    return f": {data.get('message')}" if isinstance(data, dict) and data.get("message") else ""


def _next_link(header: str, api: str) -> str | None:
    """The ``rel="next"`` page of a ``Link`` header, only on the same API (the token goes there)."""
    for part in header.split(","):
        match = re.search(r'<([^>]+)>\s*;\s*rel="next"', part)
        if match and match[1].startswith(api + "/"):
            return match[1]
    return None


# ---- the pull request, from the Actions environment


def client_from_env(
    environ: Mapping[str, str] = os.environ, *, base: str | None = None, need_token: bool = True
) -> tuple[PrContext, GitHub | None]:
    """The pull request this job is about, and a client when there is a token."""
    repo = environ.get("GITHUB_REPOSITORY", "")
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", repo):
        raise FatalError("GITHUB_REPOSITORY is not set (owner/name): run inside GitHub Actions")
    token = environ.get("GITHUB_TOKEN", "")
    if need_token and not token:
        raise FatalError(
            "GITHUB_TOKEN is not set: the comment and a fix PR need it "
            "(env: GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}), or pass --no-comment with --mode push"
        )
    if token:  # hidden by its value from now on, whatever variable or file shows it again
        add_patterns([re.escape(token)])
    api = environ.get("GITHUB_API_URL") or DEFAULT_API
    stub = PrContext(repo=repo, number=0, head_ref="", base_ref="", head_repo=repo)
    client = GitHub(stub, token=token, api_url=api) if token else None
    try:
        context = read_context(environ, repo=repo, client=client, base=base)
    except ForgeError as exc:  # the pull request could not be read: nothing can run
        raise FatalError(f"cannot read the pull request: {exc}") from None
    if client is not None:
        client.context = context
    return context, client


def own_event(environ: Mapping[str, str] = os.environ) -> str:
    """Why the event is greenloop's own (its check run completing), else ``""``: a
    workflow on failed checks must not start a loop on greenloop's own verdict."""
    event = environ.get("GITHUB_EVENT_NAME", "")
    if event not in ("check_run", "check_suite"):
        return ""
    payload = _payload(environ.get("GITHUB_EVENT_PATH", ""))
    run = payload.get("check_run") or {}
    if event == "check_run" and run.get("name") == CHECK_NAME:
        return f"nothing to do: the event is greenloop's own check run ({CHECK_NAME})"
    return ""


def read_context(
    environ: Mapping[str, str], *, repo: str, client: GitHub | None, base: str | None = None
) -> PrContext:
    event_name = environ.get("GITHUB_EVENT_NAME", "")
    payload = _payload(environ.get("GITHUB_EVENT_PATH", ""))
    pull = _pull_of(event_name, payload)
    if pull is None or not _complete(pull):
        number = int(pull["number"]) if pull and pull.get("number") else _number(environ, payload)
        if number and client is not None:
            pull = client.pull(number)
        elif client is not None and event_name == "workflow_run":
            pull = _workflow_run_pull(client, payload)
    if pull is None or not _complete(pull):
        pull = _from_variables(environ, pull)
    if pull is None:
        raise FatalError(
            f"the {event_name or 'unknown'} event names no pull request (and GITHUB_HEAD_REF is "
            "not set): run greenloop pr on pull_request, check_run, check_suite, workflow_run or "
            "a pull request's issue_comment/label event"
        )
    return replace(_context(repo, event_name, pull, base), failing_check=_failing(payload))


def _failing(payload: Mapping[str, Any]) -> str:
    """The failed check the event is about: its job's name, or its workflow's file."""
    run = payload.get("check_run") or {}
    if isinstance(run, dict) and run.get("conclusion") in ("failure", "timed_out"):
        return str(run.get("name") or "")
    workflow = payload.get("workflow_run") or {}
    if isinstance(workflow, dict) and workflow.get("conclusion") in ("failure", "timed_out"):
        return str(workflow.get("path") or "")
    return ""


def _payload(path: str) -> dict[str, Any]:
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise FatalError(f"cannot read the event payload GITHUB_EVENT_PATH={path}: {exc}") from None
    return data if isinstance(data, dict) else {}


def _pull_of(event: str, payload: Mapping[str, Any]) -> dict[str, Any] | None:
    if event in PR_EVENTS or ("pull_request" in payload and "head" in payload["pull_request"]):
        found = payload.get("pull_request")
        return found if isinstance(found, dict) else None
    for key in ("check_run", "check_suite", "workflow_run"):
        pulls = (payload.get(key) or {}).get("pull_requests") or []
        if key == "check_run" and not pulls:
            pulls = (payload.get(key) or {}).get("check_suite", {}).get("pull_requests") or []
        if pulls:
            return dict(pulls[0])
    issue = payload.get("issue") or {}
    if "pull_request" in issue and issue.get("number"):
        return {"number": issue["number"]}
    return None


def _complete(pull: Mapping[str, Any]) -> bool:
    """The full pull request object (``pulls/{n}``): the repositories named, not only ids."""
    head, base = pull.get("head") or {}, pull.get("base") or {}
    return bool(
        pull.get("number")
        and head.get("ref")
        and base.get("ref")
        and (head.get("repo") or {}).get("full_name")
        and (base.get("repo") or {}).get("full_name")
    )


def _number(environ: Mapping[str, str], payload: Mapping[str, Any]) -> int:
    match = re.fullmatch(r"refs/pull/(\d+)/(?:merge|head)", environ.get("GITHUB_REF", ""))
    if match:
        return int(match[1])
    return int(payload.get("number") or 0)


def _workflow_run_pull(client: GitHub, payload: Mapping[str, Any]) -> dict[str, Any] | None:
    """A fork's PR is missing from ``workflow_run.pull_requests``: found by its head branch."""
    run = payload.get("workflow_run") or {}
    owner = str((run.get("head_repository") or {}).get("owner", {}).get("login") or "")
    branch = str(run.get("head_branch") or "")
    return client.pull_for_branch(owner, branch) if owner and branch else None


def _from_variables(
    environ: Mapping[str, str], pull: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """``GITHUB_HEAD_REF``/``GITHUB_BASE_REF`` (set on pull_request events) and the ref's number."""
    head, base = environ.get("GITHUB_HEAD_REF", ""), environ.get("GITHUB_BASE_REF", "")
    if not head:
        return None
    number = int((pull or {}).get("number") or _number(environ, {}))
    repo = environ.get("GITHUB_REPOSITORY", "")
    return {
        "number": number,
        "head": {"ref": head, "sha": "", "repo": {"full_name": repo}},
        "base": {"ref": base, "repo": {"full_name": repo}},
    }


def _context(repo: str, event: str, pull: Mapping[str, Any], base: str | None) -> PrContext:
    head, target = pull.get("head") or {}, pull.get("base") or {}
    head_repo = str((head.get("repo") or {}).get("full_name") or "")
    base_repo = str((target.get("repo") or {}).get("full_name") or repo)
    return PrContext(
        repo=repo,
        number=int(pull.get("number") or 0),
        head_ref=str(head.get("ref") or ""),
        base_ref=base or str(target.get("ref") or ""),
        head_repo=head_repo or "",
        head_sha=str(head.get("sha") or ""),
        # a deleted fork's head has no repository at all: not ours to push to either
        fork=not head_repo or head_repo.lower() != base_repo.lower(),
        url=str(pull.get("html_url") or ""),
        event=event,
    )

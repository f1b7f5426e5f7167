"""A GitLab REST v4 server on 127.0.0.1 for the GitLab forge's tests: it records every request.

It answers the endpoints ``greenloop pr --forge gitlab`` calls, as GitLab does: merge request notes
(listed oldest first, ``X-Next-Page`` paging), creating and editing a note, opening a merge
request (409 when one is open for the same branches), listing them, and commit statuses. A
project is found by its numeric id or its URL-encoded path. ``PRIVATE-TOKEN`` must be the
server's ``token``; a ``JOB-TOKEN`` is refused on notes and merge requests (401), as GitLab does.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any


@dataclass
class Project:
    id: int
    path: str
    notes: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    merge_requests: list[dict[str, Any]] = field(default_factory=list)
    statuses: list[dict[str, Any]] = field(default_factory=list)


BOT_USERNAME = "project_7_bot_greenloop"


class GitLabServer:
    """``with GitLabServer(token=...) as gl:`` -> ``gl.api_url`` is ``CI_API_V4_URL``."""

    def __init__(self, *, token: str, job_token: str = "", per_page_cap: int = 100) -> None:
        self.token = token
        self.job_token = job_token
        self.per_page_cap = per_page_cap
        self.projects: dict[int, Project] = {}
        self.requests: list[Recorded] = []
        self._ids = iter(range(1000, 10**6))
        self._lock = threading.Lock()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}/api/v4"

    def add_project(self, project_id: int, path: str) -> Project:
        self.projects[project_id] = Project(id=project_id, path=path)
        return self.projects[project_id]

    def add_note(
        self, project_id: int, iid: int, body: str, *, system: bool = False, author: str = "dev"
    ) -> int:
        note = {"id": next(self._ids), "body": body, "system": system, "noteable_iid": iid}
        note["author"] = {"username": author}
        self.projects[project_id].notes.setdefault(iid, []).append(note)
        return int(note["id"])

    def writes(self) -> list[Recorded]:
        return [r for r in self.requests if r.method != "GET"]

    def __enter__(self) -> GitLabServer:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=10)

    # ---- routing ----

    def answer(self, request: Recorded) -> tuple[int, Any, dict[str, str]]:
        if request.path == "/api/v4/user":  # the token's own user
            if not self._authorised(request.headers, "/notes"):
                return 401, {"message": "401 Unauthorized"}, {}
            return 200, {"id": 99, "username": BOT_USERNAME, "bot": True}, {}
        match = re.fullmatch(r"/api/v4/projects/([^/]+)(/.*)", request.path)
        project = self._project(urllib.parse.unquote(match.group(1))) if match else None
        if match is None or project is None:
            return 404, {"message": "404 Project Not Found"}, {}
        rest = match.group(2)
        if not self._authorised(request.headers, rest):
            return 401, {"message": "401 Unauthorized"}, {}
        with self._lock:
            return self._route(project, request, rest)

    def _route(self, project: Project, r: Recorded, rest: str) -> tuple[int, Any, dict[str, str]]:
        notes = re.fullmatch(r"/merge_requests/(\d+)/notes(?:/(\d+))?", rest)
        if notes and r.method == "GET" and notes.group(2) is None:
            return self._list_notes(project.notes.get(int(notes.group(1)), []), r.query)
        if notes and r.method == "POST" and notes.group(2) is None:
            return 201, self._new_note(project, int(notes.group(1)), r.body), {}
        if notes and r.method == "PUT" and notes.group(2):
            return self._edit_note(project, int(notes.group(1)), int(notes.group(2)), r.body)
        if rest == "/merge_requests" and r.method == "POST":
            return self._open_mr(project, r.body)
        if rest == "/merge_requests" and r.method == "GET":
            return 200, [mr for mr in project.merge_requests if _matches(mr, r.query)], {}
        status = re.fullmatch(r"/statuses/([0-9a-f]{7,40})", rest)
        if status and r.method == "POST":
            row = {"id": next(self._ids), "sha": status.group(1), **(r.body or {})}
            project.statuses.append(row)
            return 201, {**row, "status": row.get("state")}, {}
        return 404, {"message": "404 Not Found"}, {}

    def _project(self, key: str) -> Project | None:
        if key.isdigit():
            return self.projects.get(int(key))
        return next((p for p in self.projects.values() if p.path == key), None)

    def _authorised(self, headers: dict[str, str], rest: str) -> bool:
        if headers.get("private-token") == self.token:
            return True
        job = headers.get("job-token")
        # GitLab's job token reaches a short list of endpoints: neither notes nor merge requests
        return bool(job) and job == self.job_token and rest.startswith("/statuses/")

    def _list_notes(
        self, notes: list[dict[str, Any]], query: dict[str, str]
    ) -> tuple[int, Any, dict[str, str]]:
        per_page = min(int(query.get("per_page", "20")), self.per_page_cap)
        page = int(query.get("page", "1"))
        ordered = notes if query.get("sort") == "asc" else list(reversed(notes))
        chunk = ordered[(page - 1) * per_page : page * per_page]
        more = page * per_page < len(ordered)
        return 200, chunk, {"X-Next-Page": str(page + 1) if more else ""}

    def _new_note(self, project: Project, iid: int, body: Any) -> dict[str, Any]:
        note = {"id": next(self._ids), "body": body["body"], "system": False, "noteable_iid": iid}
        note["author"] = {"username": BOT_USERNAME}  # the project access token's bot user
        project.notes.setdefault(iid, []).append(note)
        return note

    def _edit_note(
        self, project: Project, iid: int, note_id: int, body: Any
    ) -> tuple[int, Any, dict[str, str]]:
        for note in project.notes.get(iid, []):
            if note["id"] == note_id:
                note["body"] = body["body"]
                return 200, note, {}
        return 404, {"message": "404 Not found"}, {}

    def _open_mr(self, project: Project, body: Any) -> tuple[int, Any, dict[str, str]]:
        pair = {"source_branch": body["source_branch"], "target_branch": body["target_branch"]}
        if any(_matches(mr, {**pair, "state": "opened"}) for mr in project.merge_requests):
            return (
                409,
                {"message": ["Another open merge request already exists for this source branch"]},
                {},
            )
        iid = len(project.merge_requests) + 1
        mr = {
            **body,
            "iid": iid,
            "state": "opened",
            "web_url": f"https://gitlab.example/{project.path}/-/merge_requests/{iid}",
        }
        project.merge_requests.append(mr)
        return 201, mr, {}


def _matches(mr: dict[str, Any], query: dict[str, str]) -> bool:
    keys = ("source_branch", "target_branch", "state")
    return all(str(mr.get(k)) == query[k] for k in keys if k in query)


def _handler(server: GitLabServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            request = Recorded(
                method=self.command,
                path=url.path,
                query=dict(urllib.parse.parse_qsl(url.query)),
                headers={k.lower(): v for k, v in self.headers.items()},
                body=json.loads(raw) if raw else None,
            )
            server.requests.append(request)
            code, payload, headers = server.answer(request)
            data = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = _serve

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler

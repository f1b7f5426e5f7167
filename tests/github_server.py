"""A real HTTP server on 127.0.0.1 answering the GitHub REST endpoints ``greenloop pr`` uses, and
recording every request (method, path, headers, JSON body) for the tests to assert."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class GitHubState:
    repo: str
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    check_runs: list[dict[str, Any]] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)
    next_id: int = 1000
    url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def calls(self, method: str, pattern: str = "") -> list[Recorded]:
        return [r for r in self.requests if r.method == method and re.search(pattern, r.path)]

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id


def pull_json(
    repo: str, number: int, head: str, base: str, sha: str = "", head_repo: str = ""
) -> dict[str, Any]:
    """A pull request as ``GET /repos/{repo}/pulls/{n}`` returns it (the fields read)."""
    return {
        "number": number,
        "html_url": f"https://github.example/{repo}/pull/{number}",
        "head": {"ref": head, "sha": sha, "repo": {"full_name": head_repo or repo}},
        "base": {"ref": base, "repo": {"full_name": repo}},
    }


def _head_is(pull: dict[str, Any], owner: str, branch: str) -> bool:
    head = pull["head"]
    return bool(head["ref"] == branch and head["repo"]["full_name"].split("/")[0] == owner)


class _Handler(BaseHTTPRequestHandler):
    state: GitHubState

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._answer("GET")

    def do_POST(self) -> None:
        self._answer("POST")

    def do_PATCH(self) -> None:
        self._answer("PATCH")

    def _answer(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        url = urlsplit(self.path)
        st = self.state
        with st.lock:
            st.requests.append(Recorded(method, self.path, dict(self.headers.items()), body))
            if self.headers.get("Authorization") != "Bearer " + TOKEN:
                return self._send(401, {"message": "Bad credentials"})
            status, data, headers = self._route(method, url.path, parse_qs(url.query), body)
        self._send(status, data, headers)

    def _route(
        self, method: str, path: str, query: dict[str, list[str]], body: Any
    ) -> tuple[int, Any, dict[str, str]]:
        st, repo = self.state, f"/repos/{self.state.repo}"
        if path == "/user":  # GitHub refuses an installation token here
            return 403, {"message": "Resource not accessible by integration"}, {}
        if m := re.fullmatch(rf"{repo}/pulls/(\d+)", path):
            found = st.pulls.get(int(m[1]))
            return (200, found, {}) if found else (404, {"message": "Not Found"}, {})
        if m := re.fullmatch(rf"{repo}/issues/(\d+)/comments", path):
            items = st.comments.setdefault(int(m[1]), [])
            if method == "POST":  # an installation token writes as the app's bot, as on GitHub
                made = {"id": st.new_id(), "body": body["body"], "user": dict(BOT)}
                made["html_url"] = f"https://github.example/c/{made['id']}"
                items.append(made)
                return 201, made, {}
            size, page = int(query["per_page"][0]), int(query.get("page", ["1"])[0])
            chunk = items[(page - 1) * size : page * size]
            more = len(items) > page * size
            link = f'<{st.url}{path}?per_page={size}&page={page + 1}>; rel="next"' if more else ""
            return 200, chunk, {"Link": link} if link else {}
        if m := re.fullmatch(rf"{repo}/issues/comments/(\d+)", path):
            for items in st.comments.values():
                for item in items:
                    if item["id"] == int(m[1]):
                        item["body"] = body["body"]
                        return 200, item, {}
            return 404, {"message": "Not Found"}, {}
        if path == f"{repo}/pulls" and method == "GET":
            owner, _, branch = query["head"][0].partition(":")
            return 200, [p for p in st.pulls.values() if _head_is(p, owner, branch)], {}
        if path == f"{repo}/pulls" and method == "POST":
            number = max([*st.pulls, 0]) + 1
            made = pull_json(st.repo, number, body["head"], body["base"])
            made |= {"title": body["title"], "body": body["body"]}
            st.pulls[number] = made
            return 201, made, {}
        if path == f"{repo}/check-runs" and method == "POST":
            made = {
                "id": st.new_id(),
                **body,
                "html_url": f"https://github.example/runs/{st.next_id}",
            }
            st.check_runs.append(made)
            return 201, made, {}
        return 404, {"message": f"no route {method} {path}"}, {}

    def _send(self, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
        raw = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(raw)


BOT = {"login": "github-actions[bot]", "type": "Bot"}
"""The author of what the job's token writes."""
TOKEN = "ghs_" + "TestTokenValue0123456789abcdefXYZ"
"""The job's token (a GitHub App installation token's shape, as Actions' GITHUB_TOKEN is)."""


@contextmanager
def github_server(repo: str) -> Iterator[GitHubState]:
    state = GitHubState(repo=repo)
    handler = type("Handler", (_Handler,), {"state": state})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)

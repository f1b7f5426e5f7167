#!/usr/bin/env python3
"""Gemini CLI (`gemini -p`) against the replay server (Gemini generateContent API).

GOOGLE_GEMINI_BASE_URL points the @google/genai client at the replay server;
auth must be preselected as "gemini-api-key" in ~/.gemini/settings.json (else
exit 41 "Invalid auth method selected").  The first call of every prompt is a
model-router request (flash-lite, JSON schema output, no tools) that the
server answers as a side request.  Edit tools (replace/write_file) are only
offered with --approval-mode auto_edit (or --yolo).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from _common import ReplayServer, Reply, bin_path, check, dump, fresh_env, make_repo, run

SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "privacy": {"usageStatisticsEnabled": False},
    "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
    "telemetry": {"enabled": False},
}
FLAGS = ["-o", "json", "--skip-trust", "--approval-mode", "auto_edit"]


def gemini_env(srv: ReplayServer) -> dict[str, str]:
    env = fresh_env(
        GEMINI_API_KEY="dummy", GOOGLE_GEMINI_BASE_URL=srv.root_url, GEMINI_CLI_NO_RELAUNCH="true"
    )
    settings = Path(env["HOME"]) / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps(SETTINGS))
    return env


def main() -> bool:
    repo = make_repo({"hello.txt": "hello world\n"})
    target = str(repo / "hello.txt")
    script = [
        Reply.call("read_file", file_path=target),
        Reply.call(
            "replace",
            file_path=target,
            instruction="greet greenloop",
            old_string="hello world",
            new_string="hello greenloop",
        ),
        Reply.say("Edited hello.txt."),
        Reply.say("Second turn answer."),
    ]
    with ReplayServer(script, api="gemini") as srv:
        env = gemini_env(srv)
        first = run(
            [bin_path("gemini"), *FLAGS, "-p", "Change 'world' to 'greenloop' in hello.txt"],
            repo,
            env,
            stdin="",
        )
        ok = check("gemini edit: rc 0", first.returncode == 0)
        ok &= check(
            "gemini edit: file changed", (repo / "hello.txt").read_text() == "hello greenloop\n"
        )
        second = run(
            [bin_path("gemini"), *FLAGS, "--resume", "latest", "-p", "And now?"],
            repo,
            env,
            stdin="",
        )
        last = json.dumps(srv.main_requests[-1].get("contents", [])) if srv.main_requests else ""
        ok &= check("gemini resume: rc 0", second.returncode == 0)
        ok &= check(
            "gemini resume: history carried", "hello greenloop" in last and "And now?" in last
        )
        print(
            "hits:",
            sorted(set(srv.hits)),
            "requests:",
            len(srv.requests),
            "main:",
            len(srv.main_requests),
        )
        dump("/tmp/gemini_requests.json", srv.requests)
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)

#!/usr/bin/env python3
"""Aider against the replay server (OpenAI chat completions, streamed SSE).

The scripted model answers with a SEARCH/REPLACE block (aider's "diff" edit
format); aider applies it to hello.txt.  A second run with
--restore-chat-history shows how aider "continues" (it replays
.aider.chat.history.md into the new prompt).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from _common import ReplayServer, Reply, bin_path, check, dump, fresh_env, make_repo, run

EDIT = """I'll change the greeting.

hello.txt
```
<<<<<<< SEARCH
hello world
=======
hello greenloop
>>>>>>> REPLACE
```
"""

FLAGS = [
    "--model",
    "openai/replay-model",
    "--edit-format",
    "diff",
    "--yes-always",
    "--no-auto-commits",
    "--no-dirty-commits",
    "--no-auto-lint",
    "--no-auto-test",
    "--no-check-update",
    "--no-show-release-notes",
    "--analytics-disable",
    "--no-analytics",
    "--no-show-model-warnings",
    "--no-check-model-accepts-settings",
    "--no-gitignore",
    "--no-detect-urls",
    "--no-suggest-shell-commands",
    "--no-fancy-input",
    "--no-pretty",
    "--map-tokens",
    "0",
    "--weak-model",
    "openai/replay-weak",
]


MODEL_INFO = {
    "replay-model": {
        "max_input_tokens": 128000,
        "max_output_tokens": 4096,
        "input_cost_per_token": 0,
        "output_cost_per_token": 0,
        "litellm_provider": "openai",
        "mode": "chat",
    }
}


def seed_model_cache(home: str) -> None:
    """Aider downloads litellm's model price list unless a fresh non-empty cache exists."""
    cache = Path(home) / ".aider" / "caches" / "model_prices_and_context_window.json"
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(MODEL_INFO))


def main() -> bool:
    repo = make_repo({"hello.txt": "hello world\n"})
    (repo / "prompt.txt").write_text("Change 'world' to 'greenloop' in hello.txt")
    # Side rule: weak-model (commit message / summary) calls do not consume the script.
    with ReplayServer(
        [Reply.say(EDIT), Reply.say("Nothing more to do.")],
        api="chat",
        model="openai/replay-model",
        is_side=lambda r: r.get("model") == "replay-weak",
    ) as srv:
        env = fresh_env(
            OPENAI_API_BASE=srv.base_url,
            OPENAI_API_KEY="sk-dummy",
            LITELLM_LOCAL_MODEL_COST_MAP="True",
            AIDER_ANALYTICS="false",
            AIDER_CHECK_UPDATE="false",
        )
        seed_model_cache(env["HOME"])
        cmd = [bin_path("aider"), *FLAGS, "--message-file", "prompt.txt", "hello.txt"]
        first = run(cmd, repo, env)
        ok = check("aider edit: rc 0", first.returncode == 0)
        ok &= check(
            "aider edit: file changed", (repo / "hello.txt").read_text() == "hello greenloop\n"
        )
        ok &= check(
            "aider edit: streamed", bool(srv.requests) and srv.requests[0].get("stream") is True
        )
        git_log = run(["git", "log", "--oneline"], repo, env)
        ok &= check("aider edit: no auto-commit", len(git_log.stdout.splitlines()) == 1)
        (repo / "prompt.txt").write_text("Anything else?")
        cmd2 = [
            bin_path("aider"),
            *FLAGS,
            "--restore-chat-history",
            "--message-file",
            "prompt.txt",
            "hello.txt",
        ]
        second = run(cmd2, repo, env)
        last = json.dumps(srv.main_requests[-1]["messages"]) if srv.main_requests else ""
        ok &= check("aider continue: rc 0", second.returncode == 0)
        ok &= check(
            "aider continue: previous exchange replayed",
            "hello greenloop" in last and "Anything else?" in last,
        )
        print(
            "hits:",
            sorted(set(srv.hits)),
            "requests:",
            len(srv.requests),
            "main:",
            len(srv.main_requests),
        )
        print("models:", [r.get("model") for r in srv.requests])
        dump("/tmp/aider_requests.json", srv.requests)
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)

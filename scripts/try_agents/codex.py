#!/usr/bin/env python3
"""Codex CLI (`codex exec`) against the replay server (OpenAI Responses API).

codex >= 0.1xx only speaks wire_api = "responses" to custom providers
("chat" is rejected at config load).  The scripted model calls the
`exec_command` function tool with an `apply_patch` heredoc, which codex
intercepts and applies as a patch; the file on disk changes.  A second call
`codex exec resume --last` continues the thread.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from _common import ReplayServer, Reply, bin_path, check, dump, fresh_env, make_repo, run

PATCH = """apply_patch <<'EOF'
*** Begin Patch
*** Update File: hello.txt
@@
-hello world
+hello greenloop
*** End Patch
EOF"""

CONFIG = """model = "replay-model"
model_provider = "replay"
check_for_update_on_startup = false

[model_providers.replay]
name = "Replay"
base_url = "{base_url}"
env_key = "REPLAY_API_KEY"
wire_api = "responses"
request_max_retries = 1
stream_max_retries = 1

[analytics]
enabled = false

[feedback]
enabled = false

[history]
persistence = "save-all"
"""

FLAGS = ["--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"]


def write_config(env: dict[str, str], srv: ReplayServer) -> None:
    codex_home = Path(env["CODEX_HOME"])
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(CONFIG.format(base_url=srv.base_url))


def codex_env(srv: ReplayServer) -> dict[str, str]:
    env = fresh_env(REPLAY_API_KEY="sk-dummy")
    env["CODEX_HOME"] = f"{env['HOME']}/.codex"
    write_config(env, srv)
    return env


def thread_id(stdout: str) -> str:
    for line in stdout.splitlines():
        if line.startswith("{") and '"thread.started"' in line:
            return str(json.loads(line)["thread_id"])
    return ""


STOP_HOOK = r"""#!/usr/bin/env python3
import json, sys, pathlib
data = json.load(sys.stdin)
with pathlib.Path(__file__).with_name("hook_inputs.jsonl").open("a") as f:
    f.write(json.dumps(data) + "\n")
if not data.get("stop_hook_active"):
    print(json.dumps({"decision": "block", "reason": "GREENLOOP: tests failed: test_x"}))
"""


def stop_hook() -> bool:
    """~/.codex/hooks.json Stop hook; needs --dangerously-bypass-hook-trust in exec."""
    repo = make_repo({"hello.txt": "hello\n"})
    with ReplayServer([Reply.say("All done."), Reply.say("Fixed.")], api="responses") as srv:
        env = codex_env(srv)
        hook = Path(env["CODEX_HOME"]) / "stop_hook.py"
        hook.write_text(STOP_HOOK)
        hooks = {
            "hooks": {
                "Stop": [
                    {"hooks": [{"type": "command", "command": f"python3 {hook}", "timeout": 30}]}
                ]
            }
        }
        (hook.parent / "hooks.json").write_text(json.dumps(hooks))
        proc = run(
            [bin_path("codex"), "exec", *FLAGS, "--dangerously-bypass-hook-trust", "-"],
            repo,
            env,
            stdin="do it",
        )
        ok = check("codex stop hook: rc 0", proc.returncode == 0)
        ok &= check("codex stop hook: 2 main requests", len(srv.main_requests) == 2)
        nxt = (
            json.dumps(srv.main_requests[1].get("input", [])) if len(srv.main_requests) > 1 else ""
        )
        ok &= check("codex stop hook: reason in next request", "GREENLOOP: tests failed" in nxt)
        dump("/tmp/codex_stop_requests.json", srv.requests)
    log = hook.with_name("hook_inputs.jsonl")
    inputs = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
    for item in inputs:
        print("hook stdin:", json.dumps(item))
    ok &= check(
        "codex stop hook: stop_hook_active False then True",
        [i.get("stop_hook_active") for i in inputs] == [False, True],
    )
    return ok


def main() -> bool:
    repo = make_repo({"hello.txt": "hello world\n"})
    script = [
        Reply.call("exec_command", cmd=PATCH),
        Reply.say("Patched hello.txt."),
        Reply.say("Second turn answer."),
    ]
    with ReplayServer(script, api="responses") as srv:
        env = codex_env(srv)
        first = run(
            [bin_path("codex"), "exec", *FLAGS, "-"],
            repo,
            env,
            stdin="Change 'world' to 'greenloop' in hello.txt",
        )
        ok = check("codex edit: rc 0", first.returncode == 0)
        ok &= check(
            "codex edit: file changed", (repo / "hello.txt").read_text() == "hello greenloop\n"
        )
        tid = thread_id(first.stdout)
        second = run(
            [bin_path("codex"), "exec", "resume", *FLAGS, tid, "-"], repo, env, stdin="And now?"
        )
        last = json.dumps(srv.main_requests[-1].get("input", [])) if srv.main_requests else ""
        ok &= check("codex resume: rc 0", second.returncode == 0)
        ok &= check(
            "codex resume: history carried", "Patched hello.txt." in last and "And now?" in last
        )
        print(
            "hits:",
            sorted(set(srv.hits)),
            "requests:",
            len(srv.requests),
            "main:",
            len(srv.main_requests),
        )
        dump("/tmp/codex_requests.json", srv.requests)
    return ok


if __name__ == "__main__":
    results = [main(), stop_hook()]
    sys.exit(0 if all(results) else 1)

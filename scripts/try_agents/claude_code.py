#!/usr/bin/env python3
"""Claude Code (`claude -p`) against the replay server (Anthropic Messages API).

1. edit:   scripted Read + Edit tool_use blocks -> file on disk changes.
2. resume: a second `claude -p --resume <session_id>` call carries the history.
3. stop hook: a Stop hook in .claude/settings.json blocks once; the reason text
   shows up in the next request Claude sends to the model.
"""

from __future__ import annotations

import json
import sys

from _common import ReplayServer, Reply, bin_path, check, dump, fresh_env, make_repo, run

HOOK = r"""#!/usr/bin/env python3
import json, sys, pathlib
data = json.load(sys.stdin)
log = pathlib.Path(__file__).with_name("hook_inputs.jsonl")
with log.open("a") as f:
    f.write(json.dumps(data) + "\n")
if not data.get("stop_hook_active"):
    print(json.dumps({"decision": "block", "reason": "GREENLOOP: tests failed: test_x expected 3 got 2"}))
"""


def claude_env(srv: ReplayServer) -> dict[str, str]:
    return fresh_env(
        ANTHROPIC_BASE_URL=srv.root_url,
        ANTHROPIC_API_KEY="sk-ant-dummy",
        ANTHROPIC_MODEL="claude-sonnet-4-5",  # any name; the server echoes it
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",  # = DISABLE_AUTOUPDATER+TELEMETRY+ERROR_REPORTING+BUG_COMMAND
        DISABLE_AUTOUPDATER="1",
        DISABLE_TELEMETRY="1",
        DISABLE_ERROR_REPORTING="1",
        CLAUDE_CODE_ENABLE_TELEMETRY="0",
        IS_SANDBOX="1",
    )


def claude_cmd(*extra: str) -> list[str]:
    return [
        bin_path("claude"),
        "-p",
        "--output-format",
        "json",
        "--permission-mode",
        "acceptEdits",
        *extra,
    ]


def all_text(request: dict) -> str:
    return json.dumps(request.get("messages", []))


def edit_and_resume() -> bool:
    repo = make_repo({"hello.txt": "hello world\n"})
    target = str(repo / "hello.txt")
    script = [
        Reply.call("Read", "Let me read it.", file_path=target),
        Reply.call(
            "Edit", file_path=target, old_string="hello world", new_string="hello greenloop"
        ),
        Reply.say("Edited hello.txt."),
        Reply.say("Second turn answer."),
    ]
    with ReplayServer(script, api="messages") as srv:
        env = claude_env(srv)
        first = run(claude_cmd(), repo, env, stdin="Change 'world' to 'greenloop' in hello.txt")
        ok = check("claude edit: rc 0", first.returncode == 0)
        ok &= check(
            "claude edit: file changed", (repo / "hello.txt").read_text() == "hello greenloop\n"
        )
        session = json.loads(first.stdout)["session_id"] if first.returncode == 0 else ""
        n_before = len(srv.main_requests)
        second = run(claude_cmd("--resume", session), repo, env, stdin="And now?")
        ok &= check("claude resume: rc 0", second.returncode == 0)
        last = srv.main_requests[-1] if len(srv.main_requests) > n_before else {}
        ok &= check(
            "claude resume: history carried",
            "greenloop" in all_text(last) and "And now?" in all_text(last),
        )
        third = run(claude_cmd("--continue"), repo, env, stdin="Third?")
        ok &= check(
            "claude continue: history carried",
            third.returncode == 0 and "And now?" in all_text(srv.main_requests[-1]),
        )
        print("hits:", sorted(set(srv.hits)))
        print("side requests:", len(srv.requests) - len(srv.main_requests))
        dump("/tmp/claude_edit_requests.json", srv.requests)
    return ok


def stop_hook() -> bool:
    repo = make_repo({"hello.txt": "hello\n"})
    hook = repo / ".claude" / "stop_hook.py"
    hook.parent.mkdir()
    hook.write_text(HOOK)
    settings = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": f"python3 {hook}"}]}]}}
    (repo / ".claude" / "settings.json").write_text(json.dumps(settings))
    with ReplayServer([Reply.say("All done."), Reply.say("Fixed it now.")], api="messages") as srv:
        proc = run(claude_cmd(), repo, claude_env(srv), stdin="do the thing")
        ok = check("claude stop hook: rc 0", proc.returncode == 0)
        ok &= check("claude stop hook: 2 main requests", len(srv.main_requests) == 2)
        ok &= check(
            "claude stop hook: reason in next request",
            len(srv.main_requests) >= 2
            and "GREENLOOP: tests failed" in all_text(srv.main_requests[1]),
        )
        dump("/tmp/claude_stop_requests.json", srv.requests)
    log = hook.with_name("hook_inputs.jsonl")
    inputs = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    for item in inputs:
        print("hook stdin:", json.dumps(item))
    ok &= check(
        "claude stop hook: called twice, 2nd with stop_hook_active",
        [i.get("stop_hook_active") for i in inputs] == [False, True],
    )
    if proc.returncode == 0:
        print("final result:", json.loads(proc.stdout).get("result"))
    return ok


if __name__ == "__main__":
    results = [edit_and_resume(), stop_hook()]
    sys.exit(0 if all(results) else 1)

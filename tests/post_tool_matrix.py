"""The real corpus through ``hook post-tool``, in each host's payload shape, against ``check``.

Each case under tests/resources/real/ is a real run of a real project (its output, exit code and
command line). Fed to the hook as each host hands over a shell command's result, the text the model
would read is read back into a verdict and compared with the one ``greenloop check`` gives the same
output (tests/test_conformance.py). The hook may also say it cannot judge (a cut it cannot see past),
never a different verdict. Run as a script, it prints the figures:

    .venv/bin/python tests/post_tool_matrix.py
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from case_files import project_root
from greenloop.integrations.tool_output import run_post_tool
from test_conformance import CASES, case_id, check, load

CLAUDE_ERROR_CAP = 10_000
"""Claude Code cuts a failing Bash call's ``error`` text to its first and last 5,000 characters."""
CODEX_CAP = 10_000
"""Codex CLI keeps about this many characters of a long output, its head and its tail."""
HostShape = Callable[[Path, str, str, int], dict[str, Any]]


def claude(repo: Path, command: str, output: str, code: int) -> dict[str, Any]:
    base = {"session_id": "s", "cwd": str(repo), "tool_name": "Bash"}
    tool_input = {"command": command, "description": "run the tests"}
    if code:
        error = f"Exit code {code}\n{output}"
        if len(error) > CLAUDE_ERROR_CAP:  # 2.1.332: its first and last 5,000 characters
            half = CLAUDE_ERROR_CAP // 2
            cut = f"\n\n... [{len(error) - 2 * half} characters truncated] ...\n\n"
            error = error[:half] + cut + error[-half:]
        return {
            **base,
            "hook_event_name": "PostToolUseFailure",
            "tool_input": tool_input,
            "error": error,
        }
    response = {"stdout": output, "stderr": "", "interrupted": False, "isImage": False}
    return {
        **base,
        "hook_event_name": "PostToolUse",
        "tool_input": tool_input,
        "tool_response": response,
    }


def gemini(repo: Path, command: str, output: str, code: int) -> dict[str, Any]:
    tail = f"\nExit Code: {code}" if code else ""
    content = f"Output: {output or '(empty)'}{tail}\nProcess Group PGID: 4242"
    return {
        "hook_event_name": "AfterTool",
        "cwd": str(repo),
        "tool_name": "run_shell_command",
        "tool_input": {"command": command},
        "tool_response": {"llmContent": content, "returnDisplay": output},
    }


def copilot(repo: Path, command: str, output: str, code: int) -> dict[str, Any]:
    text = f"{output}\n<shellId: 0 completed with exit code {code}>"
    if len(output) > 25_000:  # Copilot keeps a long output in a file, the model gets a preview
        saved = repo / ".git" / f"copilot-tool-output-{abs(hash(output))}.txt"
        saved.write_text(output, encoding="utf-8")
        text = (
            f"Output too large to read at once ({len(output) / 1024:.1f} KB). Saved to: {saved}\n"
            "Consider using tools like grep …\n\nPreview (first 500 chars):\n"
            f"{output[:500]}\n<shellId: 0 completed with exit code {code}>"
        )
    return {
        "sessionId": "s",
        "cwd": str(repo),
        "toolName": "bash",
        "toolArgs": {"command": command, "description": "run the tests"},
        "toolResult": {"resultType": "success", "textResultForLlm": text},
    }


def codex(repo: Path, command: str, output: str, code: int) -> dict[str, Any]:
    """Codex CLI 0.171: no exit code; past about 10,000 characters its own head and tail."""
    if len(output) > CODEX_CAP:
        half = CODEX_CAP // 2
        lines = output.count("\n") + 1
        output = (
            f"Warning: truncated output (original token count: {len(output) // 4})\n"
            f"Total output lines: {lines}\n\n{output[:half]}"
            f"…{len(output) - 2 * half} chars truncated…{output[-half:]}"
        )
    return {
        "session_id": "s",
        "turn_id": "t",
        "cwd": str(repo),
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_response": output,
        "tool_use_id": "call_1",
    }


HOSTS: dict[str, HostShape] = {
    "claude": claude,
    "codex": codex,
    "gemini": gemini,
    "copilot": copilot,
}


def command_of(data: dict[str, Any]) -> str:
    argv = data["argv"]
    if isinstance(argv, str):
        return argv
    if argv[:2] == ["sh", "-c"] and len(argv) == 3:
        return str(argv[2])
    return shlex.join(argv)


def output_of(data: dict[str, Any], repo: Path) -> str:
    text = str(data["stdout"]) + str(data["stderr"])
    return text.replace(str(data["cwd_placeholder"]), str(repo))


def read_reply(reply: str) -> str:
    """The text the model reads in place of the output ("" when the output passes unchanged)."""
    if not reply:
        return ""
    data = json.loads(reply)
    if "modifiedResult" in data:
        return str(data["modifiedResult"]["textResultForLlm"])
    if "reason" in data:
        return str(data["reason"])
    specific = data["hookSpecificOutput"]
    if "updatedToolOutput" in specific:
        return str(specific["updatedToolOutput"]["stdout"])
    return str(specific.get("additionalContext", ""))


def verdict_of(text: str) -> str:
    """The verdict the model reads in the hook's text."""
    if not text:
        return "passed through"
    if "not the whole output" in text:
        return "cannot judge"
    if "characters cut by greenloop" in text:
        return "passed through"
    head = text.split("\n", maxsplit=1)[0]
    if head.startswith("greenloop: green") or re.match(r"greenloop: [^:]+ passed\b", head):
        return "green"
    if text.startswith("greenloop: an environment problem"):
        return "env_failure"
    markers = (
        ("The verifier failed", "failed"),
        ("can't be trusted", "untrusted"),
        ("The verifier was killed", "killed"),
        ("timed out", "timeout"),
        ("ENVIRONMENT FAILURE", "env_failure"),
    )
    return next((v for marker, v in markers if marker in text), "unknown")


def repo_for(data: dict[str, Any], tmp: Path) -> Path:
    """A git repository holding the case's own module names and files, as its checkout had."""
    repo = tmp / f"{data['project']}-{data['case']}"
    if not (repo / ".git").exists():
        repo.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        for name in data.get("repo_modules", ()):
            (repo / name).mkdir(exist_ok=True)
        files = data.get("repo_files") or {}
        for name, text in (files if isinstance(files, dict) else dict.fromkeys(files, "")).items():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            (repo / name).write_text(text, encoding="utf-8")
    return repo


def hook_text(data: dict[str, Any], host: str, repo: Path) -> str:
    payload = HOSTS[host](repo, command_of(data), output_of(data, repo), int(data["exit_code"]))
    answer = run_post_tool(json.dumps(payload).encode(), default_cwd=repo, environ={})
    return read_reply(answer.reply)


def row(path: Path, host: str, tmp: Path) -> tuple[str, str, str]:
    """(check's verdict, the hook's verdict, the hook's text)."""
    data = load(path)
    with project_root(data):
        checked = check(data)
    text = hook_text(data, host, repo_for(data, tmp))
    got = verdict_of(text)
    codex_silent = host == "codex" and got == "passed through"
    if got == "passed through" and (
        not checked["failures"] or "cut by greenloop" in text or codex_silent
    ):
        got = "as printed"  # no failure to digest: the model reads the runner's own words
    want = str(checked["verdict"])
    if host == "codex" and (want, got) == ("untrusted", "failed"):
        got = want  # no exit code: "exit 0, yet failures reported" reads as the failure it is
    return want, got, text


def right(want: str, got: str) -> bool:
    """The same verdict, or one line saying the whole output is not in hand, or the output as
    the runner printed it, no verdict claimed: where check too finds no failure to digest (a
    crash, a load error), no parser reads it (its head and tail, the cut marked), or the host
    sends no exit code and the output holds no runner's result (Codex: a clean ``tsc``)."""
    return got in (want, "cannot judge", "as printed")


def main() -> None:
    import tempfile

    tally: Counter[str] = Counter()
    wrong: list[str] = []
    with tempfile.TemporaryDirectory(prefix="greenloop-matrix-") as tmp:
        for path in CASES:
            for host in HOSTS:
                want, got, text = row(path, host, Path(tmp))
                ok = right(want, got)
                tally["right" if ok else "wrong"] += 1
                tally[f"{want}->{got}"] += 1
                if not ok:
                    first = text.split("\n")[0][:100]
                    wrong.append(f"{case_id(path)} {host}: check {want}, hook {got}: {first}")
    print("\n".join(wrong))
    print(dict(sorted(tally.items())))
    total = tally["right"] + tally["wrong"]
    print(f"right {tally['right']}/{total}; red called green: ", end="")
    print(sum(n for k, n in tally.items() if k.endswith("->green") and not k.startswith("green")))


if __name__ == "__main__":
    main()

"""The built-in agent against a real chat-completions server on 127.0.0.1 (greenloop.demo.server)."""

from __future__ import annotations

import json
import math
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from greenloop.agents.base import Agent, AgentRequest
from greenloop.agents.openai import SDK_MISSING, OpenAIAgent, Settings
from greenloop.agents.tools import read_file, tool_specs
from greenloop.demo.script import Reply, Response, ToolCall
from greenloop.demo.server import ReplayServer
from greenloop.errors import FatalError
from greenloop.processes.process import run_command

CALC = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
OPS = "def mul(a, b):\n    return a + b\n"
TESTS = (
    "from src.calc import add, sub\nfrom src.ops import mul\n\n\n"
    "def test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_sub():\n    assert sub(2, 3) == -1\n\n\n"
    "def test_mul():\n    assert mul(2, 3) == 6\n"
)
DIGEST_1 = (
    "Fix the failing tests.\n\n2 failed: tests/test_calc.py::test_add, test_mul\n"
    "  at tests/test_calc.py:6 in test_add\n  at src/calc.py:2 in add\n"
)
DIGEST_2 = "1 failed (was 2): tests/test_calc.py::test_mul\n  at src/ops.py:2 in mul\n"


class DoctoredServer(ReplayServer):
    """The replay server, with chosen replies rewritten on the wire (what real proxies send)."""

    def __init__(self, script: list[Reply], **doctor: Any) -> None:
        super().__init__(script, api="chat")
        self.bad_args: set[int] = doctor.get("bad_args", set())
        self.cost: float | None = doctor.get("cost")

    def handle(self, method: str, path: str, body: bytes) -> Response:
        response = super().handle(method, path, body)
        if response.status != 200 or not path.endswith("/chat/completions"):
            return response
        payload = json.loads(response.body)
        if len(self.main_requests) - 1 in self.bad_args:
            for call in payload["choices"][0]["message"].get("tool_calls", []):
                call["function"]["arguments"] = '{"path": "src/calc'
        if self.cost is not None:
            payload["usage"]["cost"] = self.cost
        return Response(status=200, body=json.dumps(payload).encode())


@pytest.fixture
def repo(make_repo: Callable[..., Path]) -> Path:
    return make_repo(
        {
            "src/__init__.py": "",
            "src/calc.py": CALC,
            "src/ops.py": OPS,
            "tests/__init__.py": "",
            "tests/test_calc.py": TESTS,
        }
    )


def make_agent(server: ReplayServer, waits: list[float] | None = None, **options: Any) -> Agent:
    options.setdefault("backoff_base_s", 0.001)
    sleep = waits.append if waits is not None else (lambda _s: None)
    return OpenAIAgent.from_spec(
        "openai:replay-model", base_url=server.base_url, environ={}, sleep=sleep, **options
    )


def request(repo: Path, prompt: str, iteration: int = 1, timeout_s: float = 30) -> AgentRequest:
    return AgentRequest(
        prompt=prompt,
        repo=repo,
        iteration=iteration,
        max_iters=5,
        run_id="run-1",
        prompt_file=repo / ".greenloop" / "prompt.md",
        timeout_s=timeout_s,
    )


def pytest_passes(repo: Path) -> tuple[bool, str]:
    result = run_command([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=repo)
    return result.exit_code == 0, result.merged


def tool_answers(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def test_two_iterations_fix_the_repo_to_green_carrying_the_conversation(repo: Path) -> None:
    script = [
        Reply.call("read_file", path="src/calc.py"),
        Reply.call(
            "replace_in_file",
            path="src/calc.py",
            old="def add(a, b):\n    return a - b",
            new="def add(a, b):\n    return a + b",
        ),
        Reply.call("finish", summary="Fix add: it subtracted"),
        Reply.call("replace_in_file", path="src/ops.py", old="a + b", new="a * b"),
        Reply.say("Fixed mul, which added instead of multiplying.\nDetails follow."),
    ]
    with ReplayServer(script) as server:
        agent = make_agent(server)
        first = agent.run(request(repo, DIGEST_1))
        green, output = pytest_passes(repo)
        assert not green
        assert "test_mul" in output
        assert "test_add" not in output.split("short test summary")[-1]
        second = agent.run(request(repo, DIGEST_2 + output[-500:], iteration=2))
        bodies = server.requests
    assert isinstance(agent, Agent)
    assert first.ok, first.error
    assert first.summary == "Fix add: it subtracted"
    assert first.usage.requests == 3
    assert first.usage.prompt_tokens > 0
    assert first.usage.completion_tokens > 0
    assert second.ok, second.error
    assert second.summary == "Fixed mul, which added instead of multiplying."
    assert pytest_passes(repo)[0]
    assert (repo / "src" / "calc.py").read_text() == CALC.replace("a - b", "a + b", 1)
    assert (repo / "src" / "ops.py").read_text() == "def mul(a, b):\n    return a * b\n"
    assert len(bodies) == 5
    opening = bodies[0]["messages"]
    assert [m["role"] for m in opening] == ["system", "user"]
    assert "src/ops.py" in opening[1]["content"]  # the compact file listing
    assert "    2|     return a - b" in opening[1]["content"]  # src/calc.py offered in full
    assert opening[1]["content"].endswith(DIGEST_1)
    assert [t["function"]["name"] for t in bodies[0]["tools"]] == [
        t["function"]["name"] for t in tool_specs()
    ]
    carried = bodies[3]["messages"]
    assert carried[:2] == opening
    assert [m["role"] for m in carried] == [
        "system", "user", "assistant", "tool", "assistant", "tool", "assistant", "tool", "user"
    ]  # fmt: skip
    assert "    1| def add(a, b):" in carried[3]["content"]
    assert carried[-1]["content"].startswith(DIGEST_2)


def test_malformed_calls_and_non_unique_old_text_are_tool_errors_the_model_recovers_from(
    repo: Path,
) -> None:
    script = [
        Reply.call("read_file", path="src/calc.py"),  # arguments doctored into broken JSON
        Reply.call("run_shell", command="rm -rf /"),
        Reply.call("replace_in_file", path="src/calc.py"),
        Reply.call("replace_in_file", path="src/calc.py", old="return a - b", new="return a + b"),
        Reply.call(
            "replace_in_file",
            path="src/calc.py",
            old="def add(a, b):\n    return a - b",
            new="def add(a, b):\n    return a + b",
        ),
        Reply.call("finish", summary="Fix add"),
    ]
    with DoctoredServer(script, bad_args={0}) as server:
        outcome = make_agent(server).run(request(repo, DIGEST_1))
        answers = tool_answers(server.requests[-1])
    assert outcome.ok, outcome.error
    assert outcome.summary == "Fix add"
    assert "not valid JSON" in answers[0]
    assert "unknown tool 'run_shell'" in answers[1]
    assert "missing required argument(s): old, new" in answers[2]
    assert "matches 2 times" in answers[3]
    assert answers[4].startswith("replaced 1 occurrence in src/calc.py")
    assert (repo / "src" / "calc.py").read_text() == CALC.replace("a - b", "a + b", 1)


def test_paths_outside_the_repo_or_under_git_are_refused_with_nothing_written(
    repo: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("keep\n")
    (repo / "link").symlink_to(outside, target_is_directory=True)
    git_config = (repo / ".git" / "config").read_bytes()
    attempts = [
        ("write_file", {"path": "../../etc/passwd", "content": "root::0:0::/:/bin/sh\n"}),
        ("write_file", {"path": str(outside / "new.txt"), "content": "x\n"}),
        ("write_file", {"path": "link/new.txt", "content": "x\n"}),
        ("replace_in_file", {"path": "link/secret.txt", "old": "keep", "new": "gone"}),
        ("write_file", {"path": ".git/config", "content": "[core]\n"}),
        ("replace_in_file", {"path": ".git/config", "old": "[core]", "new": "[x]"}),
        ("read_file", {"path": "../../etc/passwd"}),
    ]
    script = [Reply.calls(*(ToolCall(name, args) for name, args in attempts))]
    script.append(Reply.call("finish", summary="tried"))
    before, before_outside = snapshot(repo), snapshot(outside)
    with ReplayServer(script) as server:
        outcome = make_agent(server).run(request(repo, DIGEST_1))
        answers = tool_answers(server.requests[-1])
    assert outcome.ok
    assert len(answers) == len(attempts)
    assert all(a.startswith("error: refused") for a in answers), answers
    assert snapshot(repo) == before
    assert (repo / ".git" / "config").read_bytes() == git_config
    assert snapshot(outside) == before_outside
    assert not (repo / "../../etc/passwd").exists()


def test_rate_limit_is_retried_after_the_servers_retry_after(repo: Path) -> None:
    limited = Reply(status=429, body='{"error": {"message": "slow down"}}')
    limited = Reply(status=429, body=limited.body, headers=(("Retry-After", "2"),))
    script = [limited, Reply.call("write_file", path="NOTES.md", content="hi\n")]
    waits: list[float] = []
    with ReplayServer(script) as server:
        outcome = make_agent(server, waits).run(request(repo, DIGEST_1))
        assert len(server.requests) == 3
    assert outcome.ok, outcome.error
    assert waits == [2.0]
    assert outcome.usage.requests == 3
    assert outcome.usage.retry_wait_s == 2.0
    assert "retrying in 2.00s after HTTP 429: slow down" in outcome.output
    assert (repo / "NOTES.md").read_text() == "hi\n"


def test_persistent_server_error_fails_the_iteration_with_the_message(repo: Path) -> None:
    waits: list[float] = []
    with ReplayServer([Reply.error(500, retry_after_ms=None)] * 5) as server:
        outcome = make_agent(server, waits, max_retries=2).run(request(repo, DIGEST_1))
        assert len(server.requests) == 3
    assert not outcome.ok
    assert "HTTP 500: replayed HTTP 500" in outcome.error
    assert "gave up after 3 attempts" in outcome.error
    assert waits == [0.001, 0.002]


def test_unreachable_endpoint_is_retried_then_reported(repo: Path) -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: connection refused
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    waits: list[float] = []
    agent = OpenAIAgent.from_spec(
        "openai:m",
        base_url=f"http://127.0.0.1:{port}/v1",
        environ={},
        sleep=waits.append,
        max_retries=1,
        backoff_base_s=0.5,
        request_timeout_s=5,
    )
    outcome = agent.run(request(repo, DIGEST_1))
    assert not outcome.ok
    assert "APIConnectionError" in outcome.error
    assert waits == [0.5]
    assert outcome.usage.requests == 2


def test_client_error_is_not_retried(repo: Path) -> None:
    with ReplayServer([Reply.error(401, '{"error": {"message": "bad key"}}')]) as server:
        outcome = make_agent(server).run(request(repo, DIGEST_1))
        assert len(server.requests) == 1
    assert not outcome.ok
    assert outcome.error == "model API error: HTTP 401: bad key"


def test_context_is_trimmed_so_every_request_stays_under_budget(repo: Path) -> None:
    big = "".join(f"line {n}: {'x' * 40}\n" for n in range(100))
    (repo / "big.txt").write_text(big)
    budget = 4000
    script = []
    for _ in range(3):
        script += [Reply.call("read_file", path="big.txt")] * 2 + [Reply.say("looked")]
    with ReplayServer(script) as server:
        agent = make_agent(server, context_budget_tokens=budget)
        prompts = [f"iteration {n}: at big.txt:{n * 30} " + "y" * 500 for n in (1, 2, 3)]
        outcomes = [agent.run(request(repo, p, iteration=i)) for i, p in enumerate(prompts, 1)]
        bodies = server.requests
    assert all(o.ok for o in outcomes)
    assert len(bodies) == 9
    for index, body in enumerate(bodies):
        chars = len(json.dumps(body["messages"])) + len(json.dumps(body["tools"]))
        assert math.ceil(chars / 3) <= budget, index
        assert body["messages"][0]["role"] == "system"
        latest = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
        assert latest.endswith(prompts[index // 3])
    last = bodies[-1]["messages"]
    assert any("[trimmed" in str(m.get("content")) for m in last)
    assert tool_answers(bodies[-1])[-1] == read_file(repo, "big.txt")  # the newest stays whole
    assert not any(prompts[0] in str(m.get("content")) for m in last)  # oldest exchange dropped


def test_search_replace_fallback_edits_files_when_tools_are_disabled(repo: Path) -> None:
    wrong = "src/calc.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n"
    right = (
        "```python\nsrc/calc.py\n<<<<<<< SEARCH\ndef add(a, b):\n    return a - b\n=======\n"
        "def add(a, b):\n    return a + b\n>>>>>>> REPLACE\n```\nDONE: Fix add's sign\n"
    )
    with ReplayServer([Reply.say(wrong), Reply.say(right)]) as server:
        agent = make_agent(server, tools=False)
        outcome = agent.run(request(repo, DIGEST_1))
        bodies = server.requests
    assert outcome.ok, outcome.error
    assert outcome.summary == "Fix add's sign"
    assert (repo / "src" / "calc.py").read_text() == CALC.replace("a - b", "a + b", 1)
    assert all("tools" not in body for body in bodies)
    assert "<<<<<<< SEARCH" in bodies[0]["messages"][0]["content"]
    assert "    2|     return a - b" in bodies[0]["messages"][1]["content"]
    assert "matches 2 times" in bodies[1]["messages"][-1]["content"]
    assert "SEARCH/REPLACE" in agent.describe()


def test_endpoint_rejecting_tools_switches_to_search_replace(repo: Path) -> None:
    refusal = '{"error": {"message": "this model does not support tools"}}'
    edit = (
        "src/ops.py\n<<<<<<< SEARCH\n    return a + b\n=======\n    return a * b\n>>>>>>> REPLACE\n"
    )
    with ReplayServer([Reply(status=400, body=refusal), Reply.say(edit)]) as server:
        outcome = make_agent(server).run(request(repo, DIGEST_1))
        bodies = server.requests
    assert outcome.ok, outcome.error
    assert "tools" in bodies[0]
    assert "tools" not in bodies[1]
    assert "<<<<<<< SEARCH" in bodies[1]["messages"][0]["content"]
    assert (repo / "src" / "ops.py").read_text() == "def mul(a, b):\n    return a * b\n"
    assert "using SEARCH/REPLACE" in outcome.output


def test_finish_with_an_empty_summary_still_ends_the_iteration(repo: Path) -> None:
    script = [Reply.call("finish", summary=""), Reply.call("write_file", path="x", content="")]
    with ReplayServer(script) as server:
        outcome = make_agent(server).run(request(repo, DIGEST_1))
        assert len(server.requests) == 1
    assert outcome.ok
    assert outcome.summary == ""


def test_a_tools_error_after_tools_worked_is_not_mistaken_for_missing_support(
    repo: Path,
) -> None:
    bad = Reply(status=400, body='{"error": {"message": "tool_call_id not found"}}')
    script = [Reply.call("list_files"), bad]
    with ReplayServer(script) as server:
        outcome = make_agent(server).run(request(repo, DIGEST_1))
        assert "tools" in server.requests[-1]
    assert not outcome.ok
    assert outcome.error == "model API error: HTTP 400: tool_call_id not found"


def test_tool_turn_limit_stops_the_iteration_without_failing_when_files_changed(
    repo: Path,
) -> None:
    script = [Reply.call("write_file", path="NOTES.md", content="x\n")]
    script += [Reply.call("read_file", path="src/calc.py")] * 10
    with ReplayServer(script) as server:
        outcome = make_agent(server, max_tool_turns=3).run(request(repo, DIGEST_1))
        answers = tool_answers(server.requests[-1])
        assert len(server.requests) == 4
    assert outcome.ok, outcome.error
    assert "tool-call limit (3)" in outcome.output
    assert len(answers) == 3  # the 4th call is answered only when the conversation continues


def test_tool_turn_limit_without_an_edit_is_an_agent_failure(repo: Path) -> None:
    script = [Reply.call("list_files")] * 10
    with ReplayServer(script) as server:
        agent = make_agent(server, max_tool_turns=2)
        outcome = agent.run(request(repo, DIGEST_1))
        assert len(server.requests) == 3
    assert not outcome.ok
    assert outcome.error == "stopped at the tool-call limit (2) without an edit"
    assert isinstance(agent, OpenAIAgent)
    assert agent.messages[-1]["content"].startswith("error: tool-call limit (2)")


def test_cost_returned_by_a_proxy_is_summed_per_iteration(repo: Path) -> None:
    script = [Reply.call("write_file", path="a.txt", content="a\n"), Reply.say("done")]
    with DoctoredServer(script, cost=0.0015) as server:
        outcome = make_agent(server).run(request(repo, DIGEST_1))
    assert outcome.usage.requests == 2
    assert outcome.usage.cost_usd == pytest.approx(0.003)


def test_no_time_left_is_a_timeout_without_a_request(repo: Path) -> None:
    with ReplayServer([]) as server:
        outcome = make_agent(server).run(request(repo, DIGEST_1, timeout_s=0))
        assert server.requests == []
    assert not outcome.ok
    assert outcome.timed_out


def test_from_spec_reads_the_base_url_and_refuses_bad_specs() -> None:
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    agent = OpenAIAgent.from_spec("openai:qwen2.5-coder", environ=env)
    assert agent.name == "openai:qwen2.5-coder"
    assert agent.settings == Settings(model="qwen2.5-coder", base_url="http://127.0.0.1:9/v1")
    assert "127.0.0.1:9" in agent.describe()
    with pytest.raises(FatalError, match="expected openai:MODEL"):
        OpenAIAgent.from_spec("openai:", environ=env)
    with pytest.raises(FatalError, match="OPENAI_API_KEY is not set"):
        OpenAIAgent.from_spec("openai:gpt-4o-mini", environ={})


def test_missing_sdk_is_a_fatal_error_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)  # what `import openai` sees when absent
    with pytest.raises(FatalError) as caught:
        OpenAIAgent.from_spec("openai:m", base_url="http://127.0.0.1:9/v1", environ={})
    assert str(caught.value) == SDK_MISSING


def test_importing_the_agent_module_does_not_import_the_sdk() -> None:
    code = "import sys, greenloop.agents.openai; print('openai' in sys.modules)"
    result = run_command([sys.executable, "-c", code])
    assert result.stdout.strip() == "False"

"""``hook post-tool`` gives the verdict ``check`` gives the same output, on every host's shape.

Real outputs: runs whose code under test ends the process with exit 0 mid-suite
(tests/resources/ended_mid_run/, made by scripts/capture_ended_mid_run.py), real pytest runs in tmp
repositories, and the real-project corpus (tests/post_tool_matrix.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from greenloop.integrations.tool_command import find_verifier
from greenloop.integrations.tool_digest import FEED_HEAD, FEED_TAIL
from greenloop.integrations.tool_hosts import wrap
from greenloop.integrations.tool_output import run_post_tool
from greenloop.parsers import ParserInput, parse_output
from greenloop.processes.process import ProcessResult
from greenloop.verify.classify import classify
from greenloop.verify.verdict import Verdict
from post_tool_matrix import HOSTS, read_reply, right, row, verdict_of
from test_conformance import CASES, case_id

MID_RUN = sorted((Path(__file__).parent / "resources" / "ended_mid_run").glob("*.json"))


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def check_verdict(command: str, output: str, exit_code: int) -> Verdict:
    """``greenloop check``'s verdict for this output (run -> parse -> classify)."""
    argv = ("sh", "-c", command)
    run = ProcessResult(
        argv=argv, exit_code=exit_code, duration_s=1.0, stdout=output, merged=output
    )
    words = tuple(command.split())
    inp = ParserInput(argv=words, exit_code=exit_code, stdout=output, merged=output, root="/tmp")
    return classify(run, parse_output(inp), command=command).verdict


def hook_text(repo: Path, host: str, command: str, output: str, exit_code: int) -> str:
    payload = HOSTS[host](repo, command, output, exit_code)
    answer = run_post_tool(json.dumps(payload).encode(), default_cwd=repo, environ={})
    assert answer.exit_code == 0, answer.message
    return read_reply(answer.reply)


@pytest.fixture
def git_repo(make_repo: Callable[..., Path]) -> Path:
    return make_repo({"README.md": "x\n"})


@pytest.mark.parametrize("path", MID_RUN, ids=lambda p: p.stem)
def test_a_run_the_code_under_test_ended_with_exit_0_mid_suite_is_not_green_on_check(
    path: Path,
) -> None:
    case = load(path)
    command = " ".join(case["argv"])
    assert case["exit_code"] == 0
    assert check_verdict(command, case["output"], 0) is Verdict.KILLED


@pytest.mark.parametrize("host", sorted(HOSTS))
@pytest.mark.parametrize("path", MID_RUN, ids=lambda p: p.stem)
def test_the_hook_calls_a_run_ended_mid_suite_what_check_calls_it_on_every_host(
    path: Path, host: str, git_repo: Path
) -> None:
    case = load(path)
    output = case["output"].replace(case["cwd_placeholder"], str(git_repo))
    text = hook_text(git_repo, host, " ".join(case["argv"]), output, 0)
    # Codex sends no exit code: the run stopped or was cut, and the hook says it cannot judge
    assert verdict_of(text) == ("cannot judge" if host == "codex" else "killed"), text
    assert "end-of-run summary" in text
    assert "green" not in text.split("\n")[0].removeprefix("greenloop:")


def test_a_quiet_pytest_run_that_prints_no_summary_after_its_100_percent_stays_green(
    make_repo: Callable[..., Path],
) -> None:
    repo = make_repo({"test_x.py": "def test_a():\n    pass\n\n\ndef test_b():\n    pass\n"})
    command = f"{sys.executable} -m pytest -qq -p no:cacheprovider"
    run = subprocess.run(command.split(), cwd=repo, capture_output=True, text=True, check=False)
    output = run.stdout + run.stderr
    assert run.returncode == 0
    assert "passed" not in output  # -qq: the progress line and nothing after it
    assert check_verdict(command, output, 0) is Verdict.GREEN
    for host in HOSTS:  # Codex sends no exit code: no summary, no verdict claimed
        seen = verdict_of(hook_text(repo, host, command, output, 0))
        assert seen == ("passed through" if host == "codex" else "green")


def test_no_duration_is_shown_where_the_host_gave_none(make_repo: Callable[..., Path]) -> None:
    repo = make_repo({"test_x.py": "def test_a():\n    assert 1 == 2\n"})
    command = f"{sys.executable} -m pytest -p no:cacheprovider"
    run = subprocess.run(command.split(), cwd=repo, capture_output=True, text=True, check=False)
    for host in ("gemini", "copilot"):  # neither sends how long the command took
        text = hook_text(repo, host, command, run.stdout, run.returncode)
        assert verdict_of(text) == "failed", text
        assert " s)" not in text.split("\n")[0], text


@pytest.mark.parametrize("path", CASES, ids=case_id)
def test_the_hook_gives_every_real_run_checks_verdict_in_every_host_shape(
    path: Path, tmp_path: Path
) -> None:
    fed = FEED_HEAD + FEED_TAIL
    read_whole = len(load(path / "case.json")["stdout"] + load(path / "case.json")["stderr"]) <= fed
    for host in HOSTS:
        want, got, text = row(path, host, tmp_path)
        assert got != "green" or want == "green", (host, text)  # never red called green
        if read_whole:  # past FEED the hook reads a head and a tail, by its cost budget
            assert right(want, got), (host, want, got, text[:300])


MIXIN = "class Checks:\n" + "".join(
    f"    def test_value_{i}(self):\n        assert self.value({i}) == {i}\n\n" for i in range(60)
)
SUITE = (
    "from mixins import Checks\n\n\n"
    "class TestDoubled(Checks):\n    def value(self, n):\n        return n * 2\n\n\n"
    "class TestSame(Checks):\n    def value(self, n):\n        return n\n\n\n"
    + "".join(f"def test_plain_{i}():\n    assert {i} == {i}\n\n\n" for i in range(100))
)


@pytest.fixture
def mixin_run(make_repo: Callable[..., Path]) -> tuple[Path, str, str, int]:
    """A real 220-test pytest run, 59 failures in tests a mixin in another file defines."""
    repo = make_repo({"tests/mixins.py": MIXIN, "tests/test_values.py": SUITE})
    command = f"{sys.executable} -m pytest -p no:cacheprovider -rN tests"
    run = subprocess.run(command.split(), cwd=repo, capture_output=True, text=True, check=False)
    assert run.returncode == 1
    assert "59 failed, 161 passed" in run.stdout
    return repo, command, run.stdout + run.stderr, run.returncode


def test_claude_codes_cut_of_a_failing_run_is_said_and_no_count_or_invented_id_is_given(
    mixin_run: tuple[Path, str, str, int],
) -> None:
    repo, command, output, code = mixin_run
    text = hook_text(repo, "claude", command, output, code)  # PostToolUseFailure, 10,000 chars
    head = text.split("\n")[0]
    assert head.startswith("greenloop: not the whole output (Claude Code passed on only the head")
    assert "It exited 1." in head
    # the name from pytest's section header, the file from its progress line
    assert (
        "First failure in the part shown: tests/test_values.py::TestDoubled::test_value_1" in text
    )
    assert "mixins.py::" not in text  # the frame's file never makes an id
    assert "  AssertionError\n  at tests/mixins.py:6" in text  # the place pytest printed
    assert "The runner's summary, in the part shown: 59 failed, 161 passed." in head  # its tail
    for claim in ("ended", "stopped", "OTHER FAILURES", "FIRST FAILING TEST"):
        assert claim not in text, claim
    assert "The part received (redacted): " in text
    assert "Full output" not in text


def test_the_whole_output_of_the_same_run_keeps_its_digest_and_counts(
    mixin_run: tuple[Path, str, str, int],
) -> None:
    repo, command, output, code = mixin_run
    for host in ("gemini", "copilot"):  # both hand over the whole output
        text = hook_text(repo, host, command, output, code)
        assert verdict_of(text) == "failed", text
        assert "59 failed, 161 passed" in text


@pytest.mark.parametrize(
    "command",
    [
        "npx mocha -r ts-node/register --reporter dot --check-leaks test/",
        "npx mocha --require test/setup.js --import tsx 'test/**/*.spec.js'",
        "npx mocha -t 5000 -R spec",  # mocha's -t is its timeout, not a name filter
        "npx jest --env node",
        "npx vitest run -c vite.config.ts --reporter=verbose",
        "node --import tsx --test test/",
        "node -r ./setup.js --test",
        "npx tape 'test/*.js'",
        "npx c8 --100 node --test --test-reporter=spec",
        "coverage run -m pytest -p xdist -c setup.cfg",
        "cargo clippy -- -D warnings",
        "python -m unittest discover -s tests",
        "npm run unit",
    ],
)
def test_an_option_that_takes_a_value_or_the_whole_test_dir_is_not_a_partial_run(
    command: str,
) -> None:
    found = find_verifier(command)
    assert found is not None
    assert found.partial == (), found.partial


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("node --test test/parse.test.js", "only test/parse.test.js"),
        ("python -m unittest test_calc", "only test_calc"),
        ("python -m unittest -v tests.test_calc.TestAdd", "only tests.test_calc.TestAdd"),
        ("npx mocha --grep parse", "--grep parse"),
        ("npx jest -t parse", "-t parse"),
        ("npx mocha test/unit/a.js", "only test/unit/a.js"),
        ("node --test --test-name-pattern=parse", "--test-name-pattern parse"),
        ("npx ava --match 'parse*'", "--match parse*"),
    ],
)
def test_one_file_one_module_or_a_name_filter_is_a_partial_run(command: str, reason: str) -> None:
    found = find_verifier(command)
    assert found is not None
    assert reason in found.partial, found.partial


@pytest.mark.parametrize(
    "command", ["bnt", "npx xo", "npx tsd", "npx prettier -c src", "./runtests.py", "npx tape t/"]
)
def test_a_runner_check_parses_is_recognised_by_the_hook(command: str) -> None:
    assert find_verifier(command) is not None


def test_without_pytests_short_summary_an_id_names_the_file_pytest_ran_not_the_mixins(
    mixin_run: tuple[Path, str, str, int],
) -> None:
    repo, command, output, code = mixin_run
    assert "short test summary" not in output  # -rN
    inp = ParserInput(
        argv=("pytest",), exit_code=code, stdout=output, merged=output, root=str(repo)
    )
    ids = [f.id for f in parse_output(inp).failures]
    assert len(ids) == 59
    assert ids[0] == "tests/test_values.py::TestDoubled::test_value_1"
    assert all(i.startswith("tests/test_values.py::Test") for i in ids)
    assert verdict_of(hook_text(repo, "gemini", command, output, code)) == "failed"
    assert "mixins.py::" not in hook_text(repo, "gemini", command, output, code)


CODEX_PAYLOAD = (
    Path(__file__).parent / "resources" / "hook_payloads" / "codex-0.171-post-tool-use-cut.json"
)


def test_codexs_recorded_payload_of_a_cut_run_gets_the_runners_summary_and_first_failure(
    git_repo: Path,
) -> None:
    """Recorded from codex 0.171 (400 failing tests): no exit code, Codex's own head + tail."""
    payload = json.loads(CODEX_PAYLOAD.read_text().replace("/tmp/glcodex/repo", str(git_repo)))
    answer = run_post_tool(json.dumps(payload).encode(), environ={})
    reply = json.loads(answer.reply)
    assert set(reply) == {"decision", "reason"}
    assert reply["decision"] == "block"
    text = reply["reason"]
    assert text.startswith("greenloop: not the whole output (Codex passed on only the head and")
    assert "The runner's summary, in the part shown: 400 failed." in text
    assert "First failure in the part shown: test_calc.py::test_add_0" in text
    assert "exited" not in text  # Codex sent no exit code


def test_codex_without_an_exit_code_takes_the_verdict_from_the_output_and_claims_none(
    mixin_run: tuple[Path, str, str, int],
) -> None:
    repo, command, output, _ = mixin_run
    payload = {"session_id": "s", "turn_id": "t", "cwd": str(repo), "hook_event_name": "PostToolUse",
               "tool_name": "Bash", "tool_input": {"command": command}, "tool_response": output}  # fmt: skip
    text = json.loads(run_post_tool(json.dumps(payload).encode(), environ={}).reply)["reason"]
    assert text.startswith("The verifier failed (`"), text  # no "exit 1" Codex never sent
    assert "59 failed, 161 passed" in text


def test_a_reply_to_an_output_claude_persisted_fits_its_2_kb_preview_where_first(
    mixin_run: tuple[Path, str, str, int], tmp_path: Path
) -> None:
    repo, command, output, code = mixin_run
    persisted = tmp_path / "tool-results" / "b1.txt"  # Claude Code keeps past 30,000 characters
    persisted.parent.mkdir()
    persisted.write_text(f"{output}\n[greenloop: exit {code}]\n")  # the wrapped command's
    response = {"stdout": output[:30_000] + f"\n[greenloop: exit {code}]", "stderr": "",
                "interrupted": False, "isImage": False, "persistedOutputPath": str(persisted)}  # fmt: skip
    payload = {"hook_event_name": "PostToolUse", "cwd": str(repo), "tool_name": "Bash",
               "tool_input": {"command": wrap(command)}, "tool_response": response}  # fmt: skip
    answer = run_post_tool(json.dumps(payload).encode(), environ={})
    seen = read_reply(answer.reply)
    assert len(seen.encode()) <= 1_900, len(seen.encode())
    assert seen.startswith("Full output (redacted): .git/greenloop/tool-output/"), seen
    assert "59 failed, 161 passed" in seen
    assert "FIRST FAILING TEST: tests/test_values.py::TestDoubled::test_value_1" in seen


CLAUDE_PAYLOAD = Path(__file__).parent / "resources" / "hook_payloads"
CLAUDE_PAYLOAD /= "claude-2.1.332-post-tool-use-failure-cut.json"


def test_claude_codes_recorded_cut_of_a_failing_run_is_read_as_head_and_tail(
    git_repo: Path,
) -> None:
    """Recorded from claude 2.1.332 (250 tests, 50 failing, no wrap): PostToolUseFailure's
    ``error`` is the first and last 5,000 characters around ``... [19995 characters truncated]``."""
    payload = json.loads(CLAUDE_PAYLOAD.read_text().replace("/tmp/glclaude/repo", str(git_repo)))
    text = read_reply(run_post_tool(json.dumps(payload).encode(), environ={}).reply)
    head = text.split("\n")[0]
    assert head.startswith("greenloop: not the whole output (Claude Code passed on only the head")
    assert "19,995 characters cut from its middle" in head
    assert "It exited 1. The runner's summary, in the part shown: 50 failed, 200 passed." in head
    assert "First failure in the part shown: tests/test_shop.py::test_price_0" in text
    assert "ValueError: no price for a batch of 0" in text

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

from greenloop.integrations.tool_output import run_post_tool
from greenloop.parsers import ParserInput, parse_output
from greenloop.processes.process import ProcessResult
from greenloop.verify.classify import classify
from greenloop.verify.verdict import Verdict
from post_tool_matrix import HOSTS, read_reply, verdict_of

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
    assert verdict_of(text) == "killed", text
    assert "end-of-run summary" in text
    assert "green" not in text.split("\n")[0]


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
    for host in HOSTS:
        assert verdict_of(hook_text(repo, host, command, output, 0)) == "green"


def test_no_duration_is_shown_where_the_host_gave_none(make_repo: Callable[..., Path]) -> None:
    repo = make_repo({"test_x.py": "def test_a():\n    assert 1 == 2\n"})
    command = f"{sys.executable} -m pytest -p no:cacheprovider"
    run = subprocess.run(command.split(), cwd=repo, capture_output=True, text=True, check=False)
    for host in ("gemini", "copilot"):  # neither sends how long the command took
        text = hook_text(repo, host, command, run.stdout, run.returncode)
        assert verdict_of(text) == "failed", text
        assert " s)" not in text.split("\n")[0], text

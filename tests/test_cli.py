"""The command line corrects a mistake instead of guessing (issue 13): real processes throughout."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from greenloop.cli.entry import build_parser
from limits import hang

PY = sys.executable
README = Path(__file__).resolve().parents[1] / "README.md"
# their own helpers are still landing these subcommands: their flag help texts come with them


def greenloop(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PY, "-m", "greenloop", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=hang(120),
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "usage", "suggestion"),
    [
        (["run", "--max-iterations", "3"], "usage: greenloop run", "did you mean --max-iters?"),
        (["run", "--max-iter", "3"], "usage: greenloop run", "did you mean --max-iters?"),
        (["chek"], "usage: greenloop", "did you mean check?"),
        (["check", "--formt", "json"], "usage: greenloop check", "did you mean --format?"),
        (["report", "--format", "htm"], "usage: greenloop report", "did you mean html?"),
    ],
)
def test_cli_names_the_closest_valid_word_under_the_subcommands_usage_when_a_word_is_wrong(
    args: list[str], usage: str, suggestion: str
) -> None:
    proc = greenloop(*args)
    assert proc.returncode == 2
    assert proc.stderr.startswith(usage)
    assert suggestion in proc.stderr


def test_cli_documents_every_flag_of_every_subcommand_and_the_verifier_command() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    undocumented = [
        f"{name} {action.option_strings or action.dest}"
        for name, command in sub.choices.items()
        for action in command._actions
        if not action.help
    ]
    assert undocumented == []
    text = greenloop("run", "--help").stdout
    for flag in ("--on-regression", "--allow-test-edits", "--all-stages", "--format", "-- CMD"):
        assert flag in text


def test_readme_usage_lists_every_subcommand() -> None:
    usage = README.read_text().split("## Usage", 1)[1].split("```", 2)[1]
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    missing = [n for n in sub.choices if not re.search(rf"^greenloop {n}\b", usage, re.M)]
    assert missing == []


def test_cli_says_no_such_directory_when_dash_c_names_none() -> None:
    proc = greenloop("-C", "/nonexistent/greenloop", "check")
    assert proc.returncode == 2
    assert "no such directory" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_verbose_names_the_executable_each_stage_resolves_to(tmp_path: Path) -> None:
    proc = greenloop("-v", "detect", "--", PY, "-m", "pytest", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"stage verify: {PY} -> {PY}" in proc.stderr


def test_run_refuses_a_shell_agent_whose_program_does_not_exist_before_anything_runs(
    make_repo: Callable[..., Path],
) -> None:
    root = make_repo({"a.txt": "x\n"})
    proc = greenloop(
        "-C", str(root), "run", "--agent", "nosuchagent-xyz --fix", "--", "sh", "-c", "touch ran"
    )
    assert proc.returncode == 2
    assert "`nosuchagent-xyz` is not a command" in proc.stderr
    assert not (root / "ran").exists()  # the baseline never ran
    assert not (root / ".git" / "greenloop").exists()

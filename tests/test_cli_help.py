"""``--help`` from its kept rendering, and the Stop hook's command line without a parser (issue 16)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from greenloop.cli.entry import _hook_handler, _stop_hook_args, build_parser
from limits import hang

PY = sys.executable


def greenloop(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, XDG_CACHE_HOME=str(cache), COLUMNS="100")
    argv = [PY, "-m", "greenloop", *args]
    return subprocess.run(
        argv, env=env, capture_output=True, text=True, check=False, timeout=hang(60)
    )


@pytest.mark.parametrize("argv", [["--help"], ["-h"], ["check", "--help"], ["hook", "-h"]])
def test_cli_help_is_argparse_help_both_when_rendered_and_when_kept(
    argv: list[str], tmp_path: Path
) -> None:
    first = greenloop(*argv, cache=tmp_path)
    kept = list((tmp_path / "greenloop" / "help").glob("*.txt"))
    second = greenloop(*argv, cache=tmp_path)
    assert (first.returncode, second.returncode) == (0, 0)
    assert len(kept) == 1
    assert first.stdout == second.stdout
    assert first.stdout.startswith("usage: greenloop")
    parser_text = subprocess.run(
        [
            PY,
            "-c",
            f"from greenloop.cli.entry import build_parser; build_parser().parse_args({argv!r})",
        ],
        env=dict(os.environ, COLUMNS="100"),
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    assert second.stdout == parser_text


def test_cli_help_is_rendered_again_when_the_kept_text_does_not_match_its_key(
    tmp_path: Path,
) -> None:
    greenloop("--help", cache=tmp_path)
    (kept,) = (tmp_path / "greenloop" / "help").glob("*.txt")
    key, _ = kept.read_text().split("\0\n", 1)
    kept.write_text(key + "x\0\nstale help\n")
    assert "stale help" not in greenloop("--help", cache=tmp_path).stdout


def test_cli_help_of_an_unknown_command_is_still_argparse_error(tmp_path: Path) -> None:
    out = greenloop("chekc", "--help", cache=tmp_path)
    assert out.returncode == 2
    assert out.stderr.count("invalid choice: 'chekc'") == 1
    assert not list((tmp_path / "greenloop" / "help").glob("*.txt"))


@pytest.mark.parametrize(
    "argv",
    [
        ["hook", "claude-stop"],
        ["hook", "claude-stop", "--no-cache"],
        ["hook", "stop"],
        ["hook", "stop", "--no-cache"],
        ["hook", "stop", "--host", "codex"],
        ["hook", "stop", "--host=gemini", "--no-cache"],
        ["hook", "stop", "--host", "no-such-host"],  # the hook says so and allows the stop
        ["hook", "stop", "--goal"],
        ["hook", "stop", "--host", "codex", "--goal", "--no-cache"],
    ],
)
def test_cli_stop_hook_line_is_read_as_the_parser_reads_it(argv: list[str]) -> None:
    fast = _stop_hook_args(argv)
    parsed = build_parser().parse_args(argv)
    assert fast is not None
    without_handler = {k: v for k, v in vars(fast).items() if k != "handler"}
    assert without_handler == {k: v for k, v in vars(parsed).items() if k != "handler"}
    assert parsed.handler is _hook_handler  # dispatches on the event, to the same function
    assert _target(fast.handler) == ("greenloop.integrations.claude_hook", "main_hook")


@pytest.mark.parametrize(
    "argv",
    [
        ["hook", "post-tool"],
        ["hook", "post-tool", "--host", "gemini"],
        ["hook", "post-tool", "--host=gemini"],
    ],
)
def test_cli_post_tool_line_is_read_as_the_parser_reads_it(argv: list[str]) -> None:
    fast = _stop_hook_args(argv)
    parsed = build_parser().parse_args(argv)
    assert fast is not None
    without_handler = {k: v for k, v in vars(fast).items() if k != "handler"}
    assert without_handler == {k: v for k, v in vars(parsed).items() if k != "handler"}
    assert _target(fast.handler) == ("greenloop.integrations.tool_output", "main_post_tool")


def _target(handler: object) -> tuple[object, ...]:
    """The (module, function) a lazy handler imports."""
    return tuple(
        sorted((c.cell_contents for c in handler.__closure__ or ()), key=len, reverse=True)
    )  # type: ignore[attr-defined]


def test_cli_stop_hook_fast_path_leaves_other_lines_to_the_parser() -> None:
    assert _stop_hook_args(["hook", "claude-stop", "-v"]) is None
    assert _stop_hook_args(["-C", "x", "hook", "claude-stop"]) is None
    assert _stop_hook_args(["hook", "stop", "--no-cache", "--host", "codex"]) is None
    assert _stop_hook_args(["hook", "claude-stop", "--host", "codex"]) is None
    assert _stop_hook_args(["hook", "stop", "--host"]) is None

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import greenloop
from greenloop.agents.scripted import scripted


def test_library_api_runs_check_and_the_loop_without_the_cli(
    make_repo: Callable[..., Path],
) -> None:
    stage = greenloop.StageSpec(
        name="test", run=f"{sys.executable} -m pytest -q -p no:cacheprovider"
    )
    root = make_repo(
        {
            "calc.py": "def add(a, b):\n    return a - b\n",
            "test_calc.py": "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n",
            ".gitignore": "__pycache__/\n",
        }
    )
    config = greenloop.Config(stages=(stage,))
    result, digest = greenloop.check(root, config=config)
    assert result.verdict is greenloop.Verdict.FAILED
    assert "test_calc.py::test_add" in digest.text
    agent = scripted([[{"replace": "calc.py", "old": "a - b", "new": "a + b"}]])
    assert isinstance(agent, greenloop.Agent)
    outcome = greenloop.run_loop(root, agent, config=config)
    assert outcome.result is greenloop.Result.SUCCESS
    assert outcome.iterations == 1


def test_importing_greenloop_loads_none_of_the_heavy_modules() -> None:
    code = (
        "import sys, greenloop.cli.entry\n"
        "heavy = [m for m in ('rich', 'jinja2', 'openai', 'mcp', 'defusedxml') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

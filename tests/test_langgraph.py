"""greenloop as a LangGraph node (issue 17): real LangGraph, an in-memory checkpointer, the real loop.

The graph: fix_until_green -> approval (interrupt) -> deploy -> smoke -> rollback on a failed smoke.
Deploy copies the repository's calc.py at the loop's final commit into a "prod" directory; smoke runs
it there in a real subprocess; rollback puts the previous prod copy back.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from greenloop.integrations.langgraph import build_deploy_graph

PY = sys.executable
CALC_BUG = "def add(a, b):\n    return a - b\n"
# A verifier that costs one interpreter start (pytest would triple this file's time).
CHECK = "from calc import add\n\nassert add(2, 3) == 5, f'add(2, 3) == {add(2, 3)}, expected 5'\n"
CONFIG = (
    '[tool.greenloop]\nmax_iters = 2\n[[tool.greenloop.stage]]\nname = "test"\n'
    f'run = "{PY} -B check.py"\n'
)
FIX = [[{"replace": "calc.py", "old": "a - b", "new": "a + b"}, {"summary": "fix add"}]]
OLD_PROD = "def add(a, b):\n    return 5  # the version in production before this graph\n"


def setup(make_repo: Callable[..., Path], tmp_path: Path, steps: list[Any]) -> tuple[Path, str]:
    root = make_repo(
        {
            "calc.py": CALC_BUG,
            "check.py": CHECK,
            "pyproject.toml": CONFIG,
            ".gitignore": "__pycache__/\n",
        }
    )
    script = tmp_path / "agent.json"
    script.write_text(json.dumps(steps))
    prod = tmp_path / "prod"
    prod.mkdir()
    (prod / "calc.py").write_text(OLD_PROD)
    return root, f"scripted:{script}"


def nodes(prod: Path, smoke_check: str) -> dict[str, Any]:
    def deploy(state: Mapping[str, Any]) -> dict[str, Any]:
        shown = subprocess.run(
            ["git", "show", f"{state['final_commit']}:calc.py"],
            cwd=state["repo"],
            capture_output=True,
            text=True,
            check=True,
        )
        (prod / "calc.py.previous").write_text((prod / "calc.py").read_text())
        (prod / "calc.py").write_text(shown.stdout)
        return {"deployed": state["final_commit"]}

    def smoke(state: Mapping[str, Any]) -> dict[str, Any]:
        out = subprocess.run([PY, "-c", smoke_check], cwd=prod, check=False, capture_output=True)
        return {"smoke_ok": out.returncode == 0}

    def rollback(state: Mapping[str, Any]) -> dict[str, Any]:
        (prod / "calc.py").write_text((prod / "calc.py.previous").read_text())
        return {"rolled_back": True}

    return {"deploy": deploy, "smoke": smoke, "rollback": rollback}


def test_langgraph_waits_for_approval_then_deploys_the_green_commit(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root, agent = setup(make_repo, tmp_path, FIX)
    prod = tmp_path / "prod"
    graph = build_deploy_graph(
        **nodes(prod, "from calc import add; assert add(2, 3) == 5"), checkpointer=InMemorySaver()
    )
    thread = {"configurable": {"thread_id": "t1"}}
    paused = graph.invoke({"repo": str(root), "agent": agent}, thread)
    assert paused["result"] == "success"
    assert paused["passed"] is True
    assert paused["iterations"] == 1
    assert Path(paused["report_path"]).is_file()
    (question,) = paused["__interrupt__"]
    assert paused["final_commit"] in question.value["final_commit"]
    assert graph.get_state(thread).next == ("approve",)
    assert (prod / "calc.py").read_text() == OLD_PROD  # nothing deployed before the approval

    done = graph.invoke(Command(resume=True), thread)
    assert done["deployed"] == paused["final_commit"]
    assert done["smoke_ok"] is True
    assert "rolled_back" not in done
    assert "a + b" in (prod / "calc.py").read_text()
    assert graph.get_state(thread).next == ()


def test_langgraph_rolls_back_when_the_smoke_test_fails_and_never_deploys_unapproved(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root, agent = setup(make_repo, tmp_path, FIX)
    prod = tmp_path / "prod"
    failing_smoke = "import os; assert os.path.exists('DATABASE_READY')"
    graph = build_deploy_graph(**nodes(prod, failing_smoke), checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "t2"}}
    graph.invoke({"repo": str(root), "agent": agent}, thread)
    done = graph.invoke(Command(resume=True), thread)
    assert done["smoke_ok"] is False
    assert done["rolled_back"] is True
    assert (prod / "calc.py").read_text() == OLD_PROD

    refused = {"configurable": {"thread_id": "t3"}}
    again = build_deploy_graph(**nodes(prod, "pass"), checkpointer=InMemorySaver())
    state = {"repo": str(root), "agent": agent}
    again.invoke(state, refused)  # already green: the loop says so without calling the agent
    final = again.invoke(Command(resume=False), refused)
    assert final["approved"] is False
    assert "deployed" not in final
    assert (prod / "calc.py").read_text() == OLD_PROD


def test_langgraph_ends_without_asking_when_the_loop_does_not_reach_green(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    root, agent = setup(make_repo, tmp_path, [[{"summary": "changes nothing"}]])
    prod = tmp_path / "prod"
    graph = build_deploy_graph(**nodes(prod, "pass"), checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "t4"}}
    done = graph.invoke({"repo": str(root), "agent": agent, "max_iters": 1}, thread)
    assert done["passed"] is False
    assert done["result"] != "success"
    assert "__interrupt__" not in done
    assert graph.get_state(thread).next == ()
    assert (prod / "calc.py").read_text() == OLD_PROD

"""greenloop as a LangGraph node (extra ``[langgraph]``, issue 17).

Seed 000 §7: "need conditional branching (deploy after green, rollback if not): graduate to LangGraph
with interrupt() at the deploy step. The loop is the inner node, the graph is the orchestration."
``fix_until_green`` is that inner node: the whole bounded loop (its limits, commits, honesty checks
unchanged) as one state update. ``build_deploy_graph`` is the documented example around it:
fix-until-green -> a human approves (``interrupt()``) -> deploy -> smoke -> rollback on a failed smoke.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypedDict

from greenloop.agents.base import Agent

Node = Callable[[Mapping[str, Any]], dict[str, Any]]


class FixState(TypedDict, total=False):
    """What ``fix_until_green`` reads (``repo``, ``agent``, optional ``task``/``max_iters``) and
    writes (the rest)."""

    repo: str
    agent: str
    """An ``--agent`` spec: a preset, ``openai:MODEL``, ``scripted:FILE.json`` or a shell command."""
    task: str
    max_iters: int
    result: str
    """The loop's Result value: ``success``, ``exhausted``, ``suspicious_pass`` …"""
    passed: bool
    """True only for ``success``: a trusted green, decided on a full run."""
    reason: str
    iterations: int
    final_commit: str
    report_path: str
    """The run record's ``report.json``."""


class DeployState(FixState, total=False):
    approved: bool
    deployed: str
    """What the deploy node deployed (its own words: a version, a commit)."""
    smoke_ok: bool
    rolled_back: bool


def fix_until_green(state: Mapping[str, Any]) -> dict[str, Any]:
    """The node: run the bounded loop on ``state["repo"]`` with ``state["agent"]``."""
    from greenloop.agents.factory import make_agent
    from greenloop.config import load_config

    root = Path(state["repo"]).resolve()
    overrides = {"task": state.get("task"), "max_iters": state.get("max_iters")}
    config = load_config(root, overrides)
    return make_fix_node(make_agent(state.get("agent") or config.agent, config))(state)


def make_fix_node(agent: Agent) -> Node:
    """A ``fix_until_green`` node bound to an Agent object (the library's Protocol)."""

    def node(state: Mapping[str, Any]) -> dict[str, Any]:
        from greenloop.config import load_config
        from greenloop.loop.loop import run_loop
        from greenloop.loop.policy import Result

        root = Path(state["repo"]).resolve()
        overrides = {"task": state.get("task"), "max_iters": state.get("max_iters")}
        outcome = run_loop(root, agent, config=load_config(root, overrides))
        return {
            "result": outcome.result.value,
            "passed": outcome.result is Result.SUCCESS,
            "reason": outcome.reason,
            "iterations": outcome.iterations,
            "final_commit": outcome.final_sha,
            "report_path": str(Path(outcome.record_dir) / "report.json"),
        }

    return node


def ask_approval(state: Mapping[str, Any]) -> dict[str, Any]:
    """Pause the graph for a human: resume with ``Command(resume=True)`` (or False) to go on."""
    from langgraph.types import interrupt

    answer = interrupt(
        {
            "question": f"Deploy {state.get('final_commit', '')[:12]}? The suite is green.",
            "final_commit": state.get("final_commit", ""),
            "report_path": state.get("report_path", ""),
        }
    )
    return {"approved": answer is True}


def build_deploy_graph(
    *,
    deploy: Node,
    smoke: Node,
    rollback: Node,
    checkpointer: Any,
    fix: Node = fix_until_green,
) -> Any:
    """fix_until_green -> (green) approval -> deploy -> smoke -> (failed) rollback.

    Anything but a trusted green ends the graph without asking; a refused approval ends it
    without deploying. ``checkpointer`` (e.g. ``InMemorySaver()``) lets the graph stop at the
    approval and resume later with the same ``thread_id``."""
    from langgraph.graph import END, START, StateGraph

    graph: Any = StateGraph(DeployState)  # its node typing can't express Mapping-in nodes
    graph.add_node("fix_until_green", fix)
    graph.add_node("approve", ask_approval)
    graph.add_node("deploy", deploy)
    graph.add_node("smoke", smoke)
    graph.add_node("rollback", rollback)
    graph.add_edge(START, "fix_until_green")
    graph.add_conditional_edges("fix_until_green", _if("passed", "approve"), ["approve", END])
    graph.add_conditional_edges("approve", _if("approved", "deploy"), ["deploy", END])
    graph.add_edge("deploy", "smoke")
    graph.add_conditional_edges("smoke", _unless("smoke_ok", "rollback"), ["rollback", END])
    graph.add_edge("rollback", END)
    return graph.compile(checkpointer=checkpointer)


def _if(flag: str, then: str) -> Callable[[Mapping[str, Any]], str]:
    from langgraph.graph import END

    return lambda state: then if state.get(flag) is True else END


def _unless(flag: str, then: str) -> Callable[[Mapping[str, Any]], str]:
    from langgraph.graph import END

    return lambda state: END if state.get(flag) is True else then

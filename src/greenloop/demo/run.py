"""``greenloop demo``: the real loop on a bundled buggy project, offline, with a scripted model.

The bundled project (``project/``: a cart with four failing tests from two bugs) is copied
into a temporary git repository. A replay server on 127.0.0.1 answers the chat-completions API
with the tool calls a good model would make, one bug per iteration, and the real built-in agent
talks to it. Everything else (verifier, digest, commits, policy, report) is the real thing.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from greenloop import git
from greenloop.agents.base import Agent, AgentOutcome, AgentRequest
from greenloop.config import Config
from greenloop.demo.script import Reply
from greenloop.demo.server import ReplayServer
from greenloop.loop.loop import LoopResult, run_loop
from greenloop.report import render as report

PROJECT = Path(__file__).parent / "project"
MODEL = "scripted-demo"
IDENTITY = {"user.name": "greenloop demo", "user.email": "demo@greenloop.invalid"}
GITIGNORE = "__pycache__/\n*.pyc\n.pytest_cache/\n"
EXIT_NO_PYTEST = 2

PRICING, CART = "src/shop/pricing.py", "src/shop/cart.py"
PRICING_BUG = "return amount_cents - amount_cents * percent // 10\n"
PRICING_FIX = "return amount_cents - amount_cents * percent // 100\n"
CART_BUG = "self.items[sku] = (price_cents, quantity)\n"
CART_FIX = (
    "_, held = self.items.get(sku, (price_cents, 0))\n"
    "        self.items[sku] = (price_cents, held + quantity)\n"
)

SCRIPTED = (
    "The model in this demo is SCRIPTED: a replay server on 127.0.0.1 plays back the tool calls "
    "a good model would make. No network, no API key. Everything else is the real greenloop."
)
REAL_MODEL = """To run greenloop with a real model on your own repository:
  greenloop run --agent openai:gpt-4o-mini                 (with OPENAI_API_KEY set)
  greenloop run --agent openai:qwen2.5-coder --base-url http://localhost:11434/v1   (Ollama)
  greenloop run --agent claude | aider | codex             (an agent CLI you have installed)"""


def script() -> tuple[Reply, ...]:
    """Iteration 1 fixes the discount bug (three failures), iteration 2 the cart bug (one)."""
    return (
        Reply.call(
            "read_file",
            "Three of the four failures are wrong discounts; the pricing module first.",
            path=PRICING,
        ),
        Reply.call("replace_in_file", path=PRICING, old=PRICING_BUG, new=PRICING_FIX),
        Reply.call("finish", summary="Discounts: the percent is out of 100, not 10"),
        Reply.call("read_file", "One failure left: adding an item twice.", path=CART),
        Reply.call("replace_in_file", path=CART, old=CART_BUG, new=CART_FIX),
        Reply.call("finish", summary="Cart.add: adding an item again adds to its quantity"),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class DemoRun:
    result: LoopResult
    repo: Path
    """The demo repository (already removed unless kept)."""
    kept: bool
    commits: str
    """``git log --oneline`` of the demo repository after the run."""
    prompts: tuple[str, ...]
    """The prompt of each iteration, as the agent received it."""
    unanswered: int
    """Scripted replies the loop never asked for (0 when the script matched the run)."""


class _Narrated:
    """The built-in agent, with each iteration's prompt (task + digest) shown as it is sent."""

    def __init__(self, inner: Agent, show: Callable[[str], None]) -> None:
        self.inner, self.show = inner, show
        self.prompts: list[str] = []

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def continues(self) -> bool:
        return self.inner.continues

    def describe(self) -> str:
        return self.inner.describe()

    def run(self, request: AgentRequest) -> AgentOutcome:
        self.prompts.append(request.prompt)
        rule = f"── iteration {request.iteration}: what the model is told (the digest) "
        self.show(f"\n{rule:─<78}\n{request.prompt.rstrip()}\n{'─' * 78}")
        outcome = self.inner.run(request)
        for line in outcome.output.splitlines():
            if line.strip():
                self.show(f"  model: {line[:120]}")
        return outcome


def run_demo(*, keep: bool, show: Callable[[str], None], parent: Path | None = None) -> DemoRun:
    """Copy the project into a new git repo and run the real loop against the replay server."""
    from greenloop.agents.openai import OpenAIAgent

    with ReplayServer(script(), api="chat", model=MODEL) as server, _no_proxy(os.environ):
        # environ={}: never send the user's OPENAI_API_KEY, even to 127.0.0.1
        inner = OpenAIAgent.from_spec(f"openai:{MODEL}", base_url=server.base_url, environ={})
        agent = _Narrated(inner, show)
        repo = make_repo(Path(tempfile.mkdtemp(prefix="greenloop-demo-", dir=parent)))
        try:
            result = run_loop(repo, agent, config=demo_config(), progress=show)
            commits = git.git(repo, "log", "--oneline", "--no-decorate").stdout
        finally:
            if not keep:
                shutil.rmtree(repo.parent, ignore_errors=True)
        unanswered = server.remaining
    return DemoRun(
        result=result,
        repo=repo,
        kept=keep,
        commits=commits,
        prompts=tuple(agent.prompts),
        unanswered=unanswered,
    )


def demo_config() -> Config:
    from greenloop.config import StageSpec

    # The scripted model answers a fixed number of turns, so the demo is bounded by its iterations;
    # the clocks only catch a hang. ~15 s of CPU idle, but 40-60 s of wall on a busy 2-core machine
    # (bench/demo.py): a 120 s cap ended users' demos there (issue 37).
    return Config(
        stages=(StageSpec(name="tests", run=verifier_command()),),
        timeout=300.0,
        max_time=900.0,
        agent_timeout=300.0,
    )


def verifier_command() -> str:
    import shlex

    return shlex.join([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"])


def make_repo(directory: Path) -> Path:
    """``directory/shop``: the bundled project, committed once with a fixed identity."""
    repo = directory / "shop"
    shutil.copytree(PROJECT, repo, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (repo / ".gitignore").write_text(GITIGNORE, encoding="utf-8")
    git.git(repo, "-c", "init.defaultBranch=main", "init", "--quiet")
    git.add_all(repo)
    git.commit(repo, "shop: a tiny cart with two bugs", identity=IDENTITY)
    return repo


@contextmanager
def _no_proxy(environ: MutableMapping[str, str]) -> Iterator[None]:
    """The SDK honours HTTP(S)_PROXY; a proxy must never see the demo's local calls."""
    saved = {k: environ.get(k) for k in ("NO_PROXY", "no_proxy")}
    for key, value in saved.items():
        environ[key] = ",".join(filter(None, (value, "127.0.0.1")))
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                environ.pop(key, None)
            else:
                environ[key] = value


def main_demo(args: argparse.Namespace) -> int:
    fmt: str = getattr(args, "format", "text")
    out = sys.stdout if fmt == "text" else sys.stderr  # json: stdout holds only the JSON
    missing = missing_dependencies()
    if missing:
        print(
            f"greenloop demo: {' and '.join(missing)} not installed for {sys.executable}; "
            "install everything the demo needs at once: pip install 'greenloop[demo]' "
            "(the same as pip install 'greenloop[llm]' pytest), then run greenloop demo again",
            file=sys.stderr,
        )
        return EXIT_NO_PYTEST
    show = report.progress_sink(out)
    show(f"greenloop demo\n{SCRIPTED}\n")
    demo = run_demo(keep=bool(args.keep), show=show)
    data = report.loop_json(demo.result)
    if fmt == "json":
        sys.stdout.write(json.dumps({**data, "demo": demo_json(demo)}, indent=2) + "\n")
    _epilogue(demo, data, out)
    return demo.result.exit_code


def missing_dependencies() -> tuple[str, ...]:
    """Every package the demo needs and cannot import, named in one message (issue 13)."""
    needed = {
        "pytest": "pytest (the demo project's tests run with it)",
        "openai": "the openai SDK (the built-in agent talks through it)",
    }
    return tuple(
        what for module, what in needed.items() if importlib.util.find_spec(module) is None
    )


def demo_json(demo: DemoRun) -> dict[str, Any]:
    return {
        "scripted": True,
        "repo": str(demo.repo) if demo.kept else None,
        "commits": demo.commits.splitlines(),
        "unanswered_replies": demo.unanswered,
    }


def _epilogue(demo: DemoRun, data: Mapping[str, Any], out: TextIO) -> None:
    lines = ["", "Commits (git log --oneline):", demo.commits.rstrip(), ""]
    lines.append(report.render_run_text(dict(data)).rstrip())
    if demo.unanswered:
        lines.append(f"\nwarning: {demo.unanswered} scripted replies were never asked for")
    where = f"kept: {demo.repo}" if demo.kept else "removed (use --keep to inspect it)"
    lines += ["", f"The demo repository is {where}", "", SCRIPTED, REAL_MODEL]
    print("\n".join(lines), file=out, flush=True)

"""A scripted agent shipped in the package: canned edits per iteration, to test the real loop.

Steps come from Python or from a JSON file (``--agent scripted:steps.json``): a list with one entry
per iteration, each a list of actions:
``{"replace": PATH, "old": TEXT, "new": TEXT}``, ``{"write": PATH, "text": TEXT}``,
``{"delete": PATH}``, ``{"commit": MESSAGE}`` (the agent commits itself), ``{"sleep": SECONDS}``,
``{"fail": EXIT_CODE}``, ``{"summary": LINE}``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from greenloop import git
from greenloop.agents.base import AgentOutcome, AgentRequest
from greenloop.errors import FatalError

Action = Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class ScriptedAgent:
    steps: tuple[tuple[Action, ...], ...]
    """Iteration N applies ``steps[N-1]``; past the end, the agent does nothing."""

    @property
    def name(self) -> str:
        return "scripted"

    @property
    def continues(self) -> bool:
        return True  # its steps never read the prompt: the loop's default framing is kept

    def describe(self) -> str:
        return f"scripted agent ({len(self.steps)} canned iterations)"

    @classmethod
    def from_file(cls, path: Path) -> ScriptedAgent:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise FatalError(f"cannot read scripted agent steps {path}: {exc}") from exc
        if not isinstance(data, list) or not all(isinstance(s, list) for s in data):
            raise FatalError(f"{path}: expected a list with a list of actions per iteration")
        return cls(steps=tuple(tuple(step) for step in data))

    def run(self, request: AgentRequest) -> AgentOutcome:
        start = time.monotonic()
        if request.iteration > len(self.steps):
            return AgentOutcome(ok=True, output="(no more scripted steps)", duration_s=0.0)
        log: list[str] = []
        summary = ""
        for action in self.steps[request.iteration - 1]:
            if "fail" in action:
                return AgentOutcome(
                    ok=False,
                    exit_code=int(action["fail"]),
                    error=f"the agent exited {action['fail']}",
                    output="\n".join(log),
                    duration_s=time.monotonic() - start,
                )
            if "summary" in action:
                summary = str(action["summary"])
                continue
            try:
                log.append(apply_action(request.repo, action, deadline=start + request.timeout_s))
            except (OSError, FatalError) as exc:  # a broken step is the agent's failure, as a value
                return AgentOutcome(
                    ok=False,
                    exit_code=1,
                    error=str(exc),
                    output="\n".join(log),
                    duration_s=time.monotonic() - start,
                )
        return AgentOutcome(
            ok=True, output="\n".join(log), summary=summary, duration_s=time.monotonic() - start
        )


def apply_action(repo: Path, action: Action, *, deadline: float) -> str:
    if "replace" in action:
        path = repo / str(action["replace"])
        text = path.read_text(encoding="utf-8")
        old, new = str(action["old"]), str(action["new"])
        if text.count(old) != 1:
            raise FatalError(f"scripted step: {old!r} occurs {text.count(old)} times in {path}")
        path.write_text(text.replace(old, new), encoding="utf-8")
        return f"edited {action['replace']}"
    if "write" in action:
        path = repo / str(action["write"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(str(action["text"]), encoding="utf-8")
        return f"wrote {action['write']}"
    if "delete" in action:
        (repo / str(action["delete"])).unlink()
        return f"deleted {action['delete']}"
    if "commit" in action:
        git.git(repo, "add", "-A")
        git.git(
            repo,
            "-c",
            "user.name=agent",
            "-c",
            "user.email=agent@localhost",
            "commit",
            "-qm",
            str(action["commit"]),
        )
        return f"committed {action['commit']!r}"
    if "sleep" in action:
        time.sleep(max(0.0, min(float(action["sleep"]), deadline - time.monotonic())))
        return f"slept {action['sleep']} s"
    raise FatalError(f"scripted step: unknown action {dict(action)!r}")


def scripted(steps: Sequence[Sequence[Action]]) -> ScriptedAgent:
    return ScriptedAgent(steps=tuple(tuple(s) for s in steps))

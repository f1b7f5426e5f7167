"""The OpenHands SDK's own agent loop on a repository, for tests/test_openhands_e2e.py.

Run with the interpreter of the SDK's venv (``scripts/install_agent_clis.sh`` puts it under
``$GREENLOOP_AGENT_CLIS/openhands-venv``; the SDK needs Python 3.12), never imported by pytest:
``python openhands_agent.py REPO BASE_URL``. The model is the scripted server at BASE_URL (OpenAI
chat completions); the hooks are the ones ``greenloop install openhands`` wrote, loaded the way
the SDK's docs say (``HookConfig.load(working_dir=...)``). The agent gets one tool of its own,
``replace`` (the SDK ships its file and terminal tools in another package). Prints one JSON line:
the conversation's final status and the hook runs the SDK recorded.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from openhands.sdk import LLM, Agent, Conversation
from openhands.sdk.event import HookExecutionEvent
from openhands.sdk.hooks import HookConfig
from openhands.sdk.tool import (
    Action,
    Observation,
    Tool,
    ToolDefinition,
    ToolExecutor,
    register_tool,
)
from pydantic import Field


class ReplaceAction(Action):
    path: str = Field(description="The file to edit.")
    old: str = Field(description="The text to replace (its first occurrence).")
    new: str = Field(description="The text to put in its place.")


class ReplaceObservation(Observation):
    pass


class ReplaceExecutor(ToolExecutor[ReplaceAction, ReplaceObservation]):
    def __call__(self, action: ReplaceAction, conversation: Any = None) -> ReplaceObservation:
        path = Path(action.path)
        path.write_text(path.read_text().replace(action.old, action.new, 1))
        return ReplaceObservation.from_text(text=f"edited {path}")


class ReplaceTool(ToolDefinition[ReplaceAction, ReplaceObservation]):
    @classmethod
    def create(cls, conv_state: Any = None, **params: Any) -> Sequence[ReplaceTool]:
        return [
            cls(
                description="Replace text in a file.",
                action_type=ReplaceAction,
                observation_type=ReplaceObservation,
                executor=ReplaceExecutor(),
            )
        ]


def main(repo: str, base_url: str) -> None:
    register_tool("ReplaceTool", ReplaceTool)
    llm = LLM(model="openai/replay-model", base_url=base_url, api_key="sk-dummy", num_retries=0)
    agent = Agent(llm=llm, tools=[Tool(name="ReplaceTool")])
    hooks: list[dict[str, Any]] = []

    def record(event: Any) -> None:
        if isinstance(event, HookExecutionEvent):
            hooks.append({"event": str(event.hook_event_type), "blocked": bool(event.blocked)})

    conversation = Conversation(
        agent=agent,
        workspace=repo,
        hook_config=HookConfig.load(working_dir=repo),
        callbacks=[record],
        visualizer=None,
    )
    conversation.send_message("Make the tests pass.")
    conversation.run()
    status = conversation.state.execution_status
    print(json.dumps({"status": str(getattr(status, "value", status)), "hooks": hooks}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

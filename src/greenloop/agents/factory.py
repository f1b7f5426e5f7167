"""``--agent`` spec -> Agent: ``openai:MODEL``, ``scripted:FILE``, a preset name, or a shell command."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from greenloop.agents.base import Agent
from greenloop.config import Config
from greenloop.errors import FatalError


def make_agent(spec: str | None, config: Config, environ: Mapping[str, str] = os.environ) -> Agent:
    if not spec:
        raise FatalError(
            "no agent: pass --agent (a preset such as claude, aider, codex, gemini, cline, openhands; "
            "openai:MODEL; or any shell command), or set agent in [tool.greenloop]"
        )
    if spec.startswith("scripted:"):
        from greenloop.agents.scripted import ScriptedAgent

        return ScriptedAgent.from_file(Path(spec.split(":", 1)[1]))
    if spec.startswith("openai:"):
        from greenloop.agents.openai import OpenAIAgent

        agent: Agent = OpenAIAgent.from_spec(
            spec, base_url=config.base_url, max_tool_turns=config.max_tool_turns
        )
        return agent
    from greenloop.agents.command import make_command_agent

    return make_command_agent(spec, environ)

"""What greenloop does on each agent host, and how that was checked: ``install --list``'s table
(docs/integrations.md has the same table, with the details).

"Real" means a test drives the host's own binary or SDK (pinned in scripts/install_agent_clis.sh)
against greenloop's scripted model server on 127.0.0.1; "by contract" means the tests feed the
host's documented payloads to the hook and check the reply against its documented schema.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class HostFacts:
    """One host: its Stop gate, its tool-output digest, how it was tried, how to install."""

    name: str
    """The name ``install`` or ``hook stop --host`` takes."""
    title: str
    stop_gate: str
    tool_output: str
    tried: str
    install: str


HOST_FACTS = (
    HostFacts(
        name="claude",
        title="Claude Code",
        stop_gate="Stop, SubagentStop, TaskCompleted",
        tool_output="PostToolUse(+Failure) on Bash; PreToolUse wrap where your rules allow",
        tried="real CLI 2.1.332",
        install="greenloop install claude",
    ),
    HostFacts(
        name="codex",
        title="Codex CLI",
        stop_gate="Stop, SubagentStop",
        tool_output="PostToolUse on Bash",
        tried="real CLI 0.171.0",
        install="greenloop install codex",
    ),
    HostFacts(
        name="gemini",
        title="Gemini CLI",
        stop_gate="AfterAgent",
        tool_output="AfterTool on run_shell_command",
        tried="real CLI 0.61.0",
        install="greenloop install gemini",
    ),
    HostFacts(
        name="copilot",
        title="Copilot CLI",
        stop_gate="agentStop (and its Claude-format Stop)",
        tool_output="postToolUse on bash",
        tried="real CLI 1.0.102",
        install="greenloop install copilot",
    ),
    HostFacts(
        name="vscode",
        title="VS Code agent hooks",
        stop_gate="Stop, SubagentStop",
        tool_output="none (no reply replaces a tool's output)",
        tried="by contract: hooks reference, VS Code 1.109-1.110",
        install="greenloop install copilot (the same .github/hooks file)",
    ),
    HostFacts(
        name="cursor",
        title="Cursor",
        stop_gate="stop (followup_message, loop_limit)",
        tool_output="none (afterShellExecution only observes)",
        tried="by contract: its hooks docs",
        install="greenloop install cursor",
    ),
    HostFacts(
        name="openhands",
        title="OpenHands SDK",
        stop_gate="Stop (decision deny)",
        tool_output="none (PostToolUse cannot replace the output)",
        tried="real SDK openhands-sdk 1.58.2",
        install="greenloop install openhands",
    ),
    HostFacts(
        name="goose",
        title="Goose",
        stop_gate="Stop (decision block; GOOSE_STOP_HOOK_BLOCK_CAP)",
        tool_output="none (PostToolUse only observes)",
        tried="by contract: its hooks guide (Open Plugins)",
        install="greenloop install goose (.agents/plugins/greenloop)",
    ),
    HostFacts(
        name="kimi",
        title="Kimi Code CLI",
        stop_gate="Stop (permissionDecision deny; one re-run a prompt)",
        tool_output="none (its runner reads no output replacement)",
        tried="by contract: its hooks docs and kimi-cli's runner",
        install="greenloop install kimi (~/.kimi-code/config.toml)",
    ),
    HostFacts(
        name="opencode",
        title="OpenCode",
        stop_gate="none (session.idle only observes)",
        tool_output="plugin tool.execute.after on bash",
        tried="real CLI opencode-ai 1.18.33",
        install="greenloop install opencode",
    ),
)


def render_table() -> list[str]:
    """The table as aligned text lines, a header first."""
    rows = [("host", "stop gate", "tool-output digest", "tried", "install")]
    rows += [(f"{h.name} ({h.title})", h.stop_gate, h.tool_output, h.tried, h.install)
             for h in HOST_FACTS]  # fmt: skip
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return [
        "  ".join(cell.ljust(widths[i]) if i < 4 else cell for i, cell in enumerate(row))
        for row in rows
    ]

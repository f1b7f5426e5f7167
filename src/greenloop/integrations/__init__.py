"""Where agents already live: the Claude Code / Codex Stop hook, its installer, the MCP server."""

#!/usr/bin/env bash
# Run every real-CLI reproduction against the embedded replay server.
# Needs: scripts/try_agents/setup.sh run first (or AGENTCLIS_BIN / AIDER_BIN set).
cd "$(dirname "$0")"
status=0
for agent in claude_code aider codex gemini; do
  echo "===== $agent ====="
  timeout 600 python3 "$agent.py" || status=1
done
exit $status

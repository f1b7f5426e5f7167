#!/usr/bin/env bash
# Install the agent CLIs OUTSIDE the repo (npm registry + PyPI only).
set -euo pipefail
PREFIX="${AGENTCLIS_PREFIX:-/tmp/agentclis}"
AIDER_VENV="${AIDER_VENV:-/tmp/aiderenv}"
npm install --prefix "$PREFIX" @anthropic-ai/claude-code @openai/codex @google/gemini-cli
python3 -m venv "$AIDER_VENV"
"$AIDER_VENV/bin/pip" install aider-chat
"$PREFIX/node_modules/.bin/claude" --version
"$PREFIX/node_modules/.bin/codex" --version
"$PREFIX/node_modules/.bin/gemini" --version
"$AIDER_VENV/bin/aider" --version

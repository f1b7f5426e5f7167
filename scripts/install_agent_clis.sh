#!/usr/bin/env bash
# Install the real agent CLIs the preset tests drive (tests/test_presets.py,
# tests/test_claude_stop_hook_e2e.py, tests/test_stop_hook_e2e.py) into one fixed prefix, outside the repo.
#
#   $GREENLOOP_AGENT_CLIS            (default /tmp/greenloop-agent-clis)
#     node_modules/.bin/{claude,codex,gemini,cline,copilot,opencode}  npm, pinned versions
#     aider-venv/bin/aider                           PyPI aider-chat, pinned, own venv
#     openhands-venv/bin/python                      PyPI openhands-sdk, pinned, own venv (Python
#                                                    3.12+: the first found on PATH or in pyenv)
#
# Idempotent: a CLI already installed at the pinned version is left alone, so a
# second run takes a second or two. Sources: the npm registry and PyPI only.
# GREENLOOP_AGENT_PYTHON picks the interpreter for aider's venv (aider-chat
# 0.86 supports Python 3.10-3.12; default: python3.11, then python3.12, python3).
set -euo pipefail

PREFIX="${GREENLOOP_AGENT_CLIS:-/tmp/greenloop-agent-clis}"
CLAUDE_VERSION=2.1.332
CODEX_VERSION=0.171.0
GEMINI_VERSION=0.61.0
CLINE_VERSION=3.0.65
COPILOT_VERSION=1.0.102
OPENCODE_VERSION=1.18.33
AIDER_VERSION=0.86.2
OPENHANDS_SDK_VERSION=1.58.2 # ~490 MB with LiteLLM, ~4 min to install on 2 cores

log() { printf 'install_agent_clis: %s\n' "$*" >&2; }

npm_version() { # installed version of an npm package under $PREFIX, or nothing
  local manifest="$PREFIX/node_modules/$1/package.json"
  [ -f "$manifest" ] && node -p "require('$manifest').version" 2>/dev/null || true
}

install_npm() {
  local wanted=()
  [ "$(npm_version @anthropic-ai/claude-code)" = "$CLAUDE_VERSION" ] ||
    wanted+=("@anthropic-ai/claude-code@$CLAUDE_VERSION")
  [ "$(npm_version @openai/codex)" = "$CODEX_VERSION" ] || wanted+=("@openai/codex@$CODEX_VERSION")
  [ "$(npm_version @google/gemini-cli)" = "$GEMINI_VERSION" ] ||
    wanted+=("@google/gemini-cli@$GEMINI_VERSION")
  [ "$(npm_version cline)" = "$CLINE_VERSION" ] || wanted+=("cline@$CLINE_VERSION")
  [ "$(npm_version @github/copilot)" = "$COPILOT_VERSION" ] ||
    wanted+=("@github/copilot@$COPILOT_VERSION")
  [ "$(npm_version opencode-ai)" = "$OPENCODE_VERSION" ] || wanted+=("opencode-ai@$OPENCODE_VERSION")
  if [ ${#wanted[@]} -eq 0 ]; then
    log "npm CLIs already at the pinned versions"
    return
  fi
  log "npm install ${wanted[*]}"
  mkdir -p "$PREFIX"
  # --save-exact keeps the prefix's package.json pinned, so the five stay consistent.
  npm install --prefix "$PREFIX" --save-exact --no-audit --no-fund --loglevel=error "${wanted[@]}"
}

aider_version() {
  "$PREFIX/aider-venv/bin/python" -c 'import importlib.metadata as m; print(m.version("aider-chat"))' 2>/dev/null || true
}

aider_python() {
  if [ -n "${GREENLOOP_AGENT_PYTHON:-}" ]; then echo "$GREENLOOP_AGENT_PYTHON"; return; fi
  local candidate
  for candidate in python3.11 python3.12 python3; do
    if command -v "$candidate" >/dev/null 2>&1; then echo "$candidate"; return; fi
  done
  log "no python3 found for aider's venv"
  exit 1
}

install_aider() {
  local venv="$PREFIX/aider-venv"
  if [ "$(aider_version)" = "$AIDER_VERSION" ]; then
    log "aider-chat already at $AIDER_VERSION"
    return
  fi
  log "pip install aider-chat==$AIDER_VERSION into $venv"
  "$(aider_python)" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "aider-chat==$AIDER_VERSION" \
    2> >(grep -v '^WARNING: Location ' >&2) # this machine's pip config names absent local indexes
}

openhands_version() {
  "$PREFIX/openhands-venv/bin/python" -c 'import importlib.metadata as m; print(m.version("openhands-sdk"))' 2>/dev/null || true
}

openhands_python() { # openhands-sdk needs Python >= 3.12; this machine's default may be older
  local candidate
  for candidate in python3.12 python3.13 python3.14; do
    if "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then
      command -v "$candidate"
      return
    fi
  done
  local root
  root="$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"
  for candidate in "$root"/versions/3.1[2-9]*/bin/python3; do
    if [ -x "$candidate" ]; then echo "$candidate"; return; fi
  done
  log "no Python 3.12+ found for the OpenHands SDK's venv"
  exit 1
}

install_openhands() {
  local venv="$PREFIX/openhands-venv"
  if [ "$(openhands_version)" = "$OPENHANDS_SDK_VERSION" ]; then
    log "openhands-sdk already at $OPENHANDS_SDK_VERSION"
    return
  fi
  log "pip install openhands-sdk==$OPENHANDS_SDK_VERSION into $venv"
  "$(openhands_python)" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "openhands-sdk==$OPENHANDS_SDK_VERSION" 2> >(grep -v '^WARNING: Location ' >&2)
}

# The installs are independent; run them side by side.
install_npm &
npm_pid=$!
install_aider &
aider_pid=$!
install_openhands &
openhands_pid=$!
status=0
wait "$npm_pid" || status=$?
wait "$aider_pid" || status=$?
wait "$openhands_pid" || status=$?
[ "$status" -eq 0 ] || { log "install failed (exit $status)"; exit "$status"; }
# Versions from the installed metadata (running `gemini --version` alone takes ~5 s).
for exe in claude codex gemini cline copilot opencode; do
  [ -x "$PREFIX/node_modules/.bin/$exe" ] || { log "missing $PREFIX/node_modules/.bin/$exe"; exit 1; }
done
[ -x "$PREFIX/aider-venv/bin/aider" ] || { log "missing $PREFIX/aider-venv/bin/aider"; exit 1; }
[ -n "$(openhands_version)" ] || { log "missing openhands-sdk in $PREFIX/openhands-venv"; exit 1; }
log "claude $(npm_version @anthropic-ai/claude-code), codex $(npm_version @openai/codex)," \
  "gemini $(npm_version @google/gemini-cli), cline $(npm_version cline)," \
  "copilot $(npm_version @github/copilot), opencode $(npm_version opencode-ai), aider $(aider_version), openhands-sdk $(openhands_version)"
log "ready: PATH=$PREFIX/node_modules/.bin:$PREFIX/aider-venv/bin"

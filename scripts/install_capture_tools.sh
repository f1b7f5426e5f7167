#!/usr/bin/env bash
# Install the real tools that scripts/capture_outputs (python3 scripts/capture_outputs) drives.
# Everything goes either in Debian packages (apt) or under /tmp/glcap-tools
# (a Python venv and an npm prefix), never into the system Python.
#
# Usage: bash scripts/install_capture_tools.sh            # everything
#        SKIP_APT=1 bash scripts/install_capture_tools.sh # only venv + npm
# Reachable registries: PyPI, npm, Debian apt. (crates.io / Maven Central are not.)
set -uo pipefail

TOOLS_DIR="${GLCAP_TOOLS:-/tmp/glcap-tools}"
VENV="$TOOLS_DIR/venv"
NODE_PREFIX="$TOOLS_DIR/node"
PY="${PYTHON:-python3.11}"
command -v "$PY" >/dev/null 2>&1 || PY=python3

mkdir -p "$TOOLS_DIR" "$NODE_PREFIX"

echo "== Python tools -> $VENV"
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV" || echo "WARN: venv creation failed"
fi
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q \
  pytest pytest-xdist pytest-cov pytest-timeout mypy ruff flake8 black \
  || echo "WARN: some pip installs failed"

echo "== Node tools -> $NODE_PREFIX"
if command -v npm >/dev/null 2>&1; then
  ( cd "$NODE_PREFIX" && [ -f package.json ] || echo '{"name":"glcap-tools","private":true}' > "$NODE_PREFIX/package.json" )
  ( cd "$NODE_PREFIX" && npm install --no-audit --no-fund --loglevel=error \
      pyright typescript eslint @eslint/js prettier jest vitest \
      mocha@11.8.0 uvu@0.5.6 ava@7.0.0 tap@21.8.0 ) \
    || echo "WARN: some npm installs failed"
else
  echo "WARN: npm not found; skipping node tools"
fi

if [ -z "${SKIP_APT:-}" ] && command -v apt-get >/dev/null 2>&1; then
  echo "== Debian packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq || echo "WARN: apt-get update failed"
  for pkg in golang-go ruby ruby-rspec ruby-minitest phpunit clang make cmake gcc; do
    apt-get install -y -qq --no-install-recommends "$pkg" >/dev/null 2>&1 \
      && echo "installed $pkg" || echo "WARN: apt install $pkg failed"
  done
fi

echo "== Rust"
if command -v cargo >/dev/null 2>&1; then
  cargo --version
  cargo clippy --version 2>/dev/null || (command -v rustup >/dev/null && rustup component add clippy) \
    || echo "WARN: clippy unavailable"
else
  echo "WARN: cargo not found (rustup needs network beyond the allowed registries); rust cases will be skipped"
fi
echo "done"

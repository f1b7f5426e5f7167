#!/usr/bin/env bash
# Everything the test suite drives besides Python packages: headless Chromium (HTML report),
# Go (go parsers and failing-first), and the real agent CLIs (preset tests). Idempotent.
set -euo pipefail
cd "$(dirname "$0")"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
bash ./install_chromium.sh
if ! command -v go >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends golang-go
fi
bash ./install_agent_clis.sh

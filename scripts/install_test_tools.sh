#!/usr/bin/env bash
# Everything the test suite drives besides Python packages: headless Chromium (HTML report),
# Go (go parsers and failing-first), and the real agent CLIs (preset tests). Idempotent.
set -euo pipefail
cd "$(dirname "$0")"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium fonts-dejavu-core)
command -v go >/dev/null 2>&1 || missing+=(golang-go)
if [ ${#missing[@]} -gt 0 ]; then
  start=$(date +%s)
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
  echo "install_test_tools: ${missing[*]} installed in $(( $(date +%s) - start )) s"
else
  echo "install_test_tools: chromium and go already installed"
fi
bash ./install_agent_clis.sh

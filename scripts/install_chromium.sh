#!/usr/bin/env bash
# Headless Chromium for tests/test_html_report.py (Debian package `chromium`). Idempotent.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
    echo "chromium already installed: $(/usr/bin/chromium --version 2>/dev/null || echo unknown)"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi

start=$(date +%s)
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core
echo "chromium installed in $(( $(date +%s) - start )) s: $(/usr/bin/chromium --version 2>/dev/null || echo unknown)"

#!/usr/bin/env bash
# Everything the test suite drives besides Python packages: headless Chromium (HTML report),
# Go (go parsers and failing-first), and the real agent CLIs (preset tests). Idempotent.
# Quiet unless it fails: the package managers' output goes to a log, printed only on failure.
# Another install holding apt's lock (unattended-upgrades, a second shell) is waited for.
set -euo pipefail
cd "$(dirname "$0")"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
LOG="${TMPDIR:-/tmp}/greenloop-install-test-tools.log"
LOCK_WAIT_S="${GREENLOOP_APT_LOCK_WAIT_S:-1200}"
: >"$LOG"

fail() {
  echo "install_test_tools: failed; its output (also in $LOG):" >&2
  cat "$LOG" >&2
  exit 1
}
trap fail ERR

apt_locked() { # true while another process holds one of apt's/dpkg's fcntl locks
  $SUDO python3 - <<'PY'
import fcntl, sys
for path in ("/var/lib/dpkg/lock-frontend", "/var/lib/dpkg/lock",
             "/var/lib/apt/lists/lock", "/var/cache/apt/archives/lock"):
    try:
        with open(path, "a") as f:
            fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except FileNotFoundError:
        continue
    except OSError:
        sys.exit(0)
sys.exit(1)
PY
}

wait_for_apt() {
  local waited=0
  while apt_locked; do
    [ "$waited" -eq 0 ] && echo "install_test_tools: waiting for another package install to finish" >&2
    [ "$waited" -lt "$LOCK_WAIT_S" ] || { echo "apt lock still held after ${LOCK_WAIT_S} s" >>"$LOG"; return 1; }
    sleep 5
    waited=$((waited + 5))
  done
}

missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium fonts-dejavu-core)
command -v go >/dev/null 2>&1 || missing+=(golang-go)
start=$(date +%s)
if [ ${#missing[@]} -gt 0 ]; then
  wait_for_apt
  apt_opts=(-o "DPkg::Lock::Timeout=$LOCK_WAIT_S")
  $SUDO apt-get "${apt_opts[@]}" update -qq >>"$LOG" 2>&1
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get "${apt_opts[@]}" install -y -qq \
    --no-install-recommends "${missing[@]}" >>"$LOG" 2>&1
fi
bash ./install_agent_clis.sh >>"$LOG" 2>&1
trap - ERR
installed="${missing[*]:-nothing from apt}"
echo "install_test_tools: ready in $(( $(date +%s) - start )) s (installed: $installed; log: $LOG)"

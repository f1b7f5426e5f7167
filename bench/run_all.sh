#!/bin/sh
# Run every benchmark; each prints its figures and one markdown row for bench/README.md.
# Usage: sh bench/run_all.sh   (from the repo root; uses /tmp/glvenv/bin/python unless PYTHON is set)
set -e
PY="${PYTHON:-/tmp/glvenv/bin/python}"
cd "$(dirname "$0")/.."
for name in startup capture check_overhead digest loop_overhead hook batch parse_linear escapes; do
    echo "## $name"
    "$PY" "bench/$name.py"
    echo
done

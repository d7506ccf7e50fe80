#!/usr/bin/env bash
# Decode speed of a whole model on one GPU: transformers' BF16 DynamicCache vs foscar's INT2/INT4
# cache (foscar.hf.FoscarCache), for a Qwen3-8B-shaped model with RANDOM weights
# (configs/hf/qwen3-8b.json: 36 layers, 32/8 heads, head_dim 128), batch {1, 8} x context {8K, 32K},
# 64 greedy decode steps per cache, plus the attention share of the step time (`foscar model-speed`, bench/model_speed_study.py).
# Random weights: a speed measurement only, no accuracy claim. With a real checkpoint on disk,
# pass --model DIR (and use `foscar eval-model --model DIR` for the accuracy numbers).
#
#   bash scripts/eval_model_gpu.sh [OUT_DIR] [extra foscar model-speed flags, e.g. --num-layers 18]
#
# Needs torch, triton, transformers (the `hf` extra) and this repo on PYTHONPATH (set below); about
# 3-5 minutes on an H200 (the first foscar decode compiles the CUDA extension, ~1 minute, unless
# TORCH_EXTENSIONS_DIR already holds it). Writes results.csv, meta.json, summary.json, model_speed.md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT="${1:-results/$(date +%Y-%m-%d)-h200-model-speed}"
shift || true
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
python3 -m bench.model_speed --random-init configs/hf/qwen3-8b.json \
  --batch 1 --batch 8 --context 8192 --context 32768 --decode 64 --out "$OUT" "$@"
cat "$OUT/model_speed.md"

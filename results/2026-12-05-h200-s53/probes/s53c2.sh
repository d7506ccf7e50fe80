#!/usr/bin/env bash
# Session 53, H200: s53c1.sh (queued by session 52; its header holds the expectations) within LIMIT1 s, then the clock
# probe (clock_probe.py: its header holds the expectations). Run through scripts/gpu_offline.sh (carry .offline).
OUT="${OUT:?set OUT}"
export OUT
START=$(date +%s)
T0=$(date +%s) LIMIT="${LIMIT1:-420}" bash results/2026-12-05-h200-s52/probes/s53c1.sh
echo "s53c1 done at $(( $(date +%s) - START )) s"
FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128" timeout "${LIMIT2:-150}" \
  python results/2026-12-05-h200-s53/probes/clock_probe.py > "$OUT/clock_probe.txt" 2>&1
echo "clock probe rc=$? at $(( $(date +%s) - START )) s"; cat "$OUT/clock_probe.txt"

#!/usr/bin/env bash
# Session 53, H200: s53c1.sh (queued by session 52; its header holds the expectations) without its stream probe, then
# the clock probe (clock_probe.py: its header holds the expectations), then s53c1's stream probe if LIMIT (default
# 500 s from the start) leaves time for it. Run through scripts/gpu_offline.sh (carry .offline).
OUT="${OUT:?set OUT}"
export OUT
START=$(date +%s)
LIMIT="${LIMIT:-500}"
left() { echo $((LIMIT - ($(date +%s) - START))); }
T0=$START LIMIT=$((LIMIT - 190)) SKIP_STREAM_PROBE=1 bash results/2026-12-05-h200-s52/probes/s53c1.sh
echo "s53c1 done at $(( $(date +%s) - START )) s"
if [ "$(left)" -ge 60 ]; then
  FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128" timeout $(( $(left) - 10 )) \
    python results/2026-12-05-h200-s53/probes/clock_probe.py > "$OUT/clock_probe.txt" 2>&1
  echo "clock probe rc=$? at $(( $(date +%s) - START )) s"; cat "$OUT/clock_probe.txt"
fi
if [ "$(left)" -ge 120 ]; then
  timeout $(( $(left) - 10 )) python results/2026-12-05-h200-s50/probes/stream_probe6.py --six \
    --spins=0,1000,2000,3000 > "$OUT/stream_probe6.txt" 2>&1
  echo "stream probe rc=$? at $(( $(date +%s) - START )) s"
else
  echo "skip stream probe: left=$(left)"
fi
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> "$OUT/gpu.csv" 2>&1

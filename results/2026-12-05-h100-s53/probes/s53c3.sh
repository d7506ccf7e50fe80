#!/usr/bin/env bash
# Session 53, H100 (no H200 came): the clock probe with the FlashInfer loads added after call3, then session 50's stream
# probe with the decode's six streams a warp and spins of 0-3000 cycles a stage (s53c1.sh's step 4; expectations in
# s53c1.sh's header, written for an H200) if LIMIT (default 380 s) leaves time. Through scripts/gpu_offline.sh.
OUT="${OUT:?set OUT}"
START=$(date +%s)
LIMIT="${LIMIT:-380}"
left() { echo $((LIMIT - ($(date +%s) - START))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > "$OUT/gpu.csv" 2>&1
FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128" MAX_JOBS=16 timeout 200 \
  python results/2026-12-05-h200-s53/probes/clock_probe.py > "$OUT/clock_probe.txt" 2>&1
echo "clock probe rc=$? at $(( $(date +%s) - START )) s"; cat "$OUT/clock_probe.txt"
if [ "$(left)" -ge 100 ]; then
  timeout $(( $(left) - 10 )) python results/2026-12-05-h200-s50/probes/stream_probe6.py --six \
    --spins=0,1000,2000,3000 > "$OUT/stream_probe6.txt" 2>&1
  echo "stream probe rc=$? at $(( $(date +%s) - START )) s"; tail -40 "$OUT/stream_probe6.txt"
else
  echo "skip stream probe: left=$(left)"
fi
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> "$OUT/gpu.csv" 2>&1

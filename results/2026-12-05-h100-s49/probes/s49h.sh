#!/usr/bin/env bash
# Session 49's stream probe alone (bench/NOTES.md §93). Calls 3 and 4 ran it from .ab/ (call 3 with --quick, call 4
# with --short) and were given H100s. QUEUED FOR AN H200 (~2 min of device time with the build): the question §93
# leaves open is what a plain read of one wave reaches there at the decode's depth (the `wcp` rows at 3 stages).
# Expected (written before): ~86% of the ceiling at 160 MiB (session 40's Triton grid-256 read 86%), bulk copies within
# 1% of cp.async as on the H100. Run from the repository root through scripts/gpu_offline.sh:
#   bash results/2026-12-05-h100-s49/probes/s49h.sh
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p $OUT/sp
t0=$SECONDS; timeout 200 python results/2026-12-05-h100-s49/probes/stream_probe.py --short > $OUT/sp/stream_probe.txt 2>&1
echo "stream probe rc=$? wall=$((SECONDS - t0))"
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
cat $OUT/sp/stream_probe.txt

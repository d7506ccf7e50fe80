#!/usr/bin/env bash
# Session 49's stream probe, then the decode at the same bytes (bench/NOTES.md §93). Calls 3 and 4 ran the probe part
# from .ab/ (call 3 with --quick, call 4 with --short) and were given H100s. QUEUED FOR AN H200 (~3 min of device time
# with the build): the question §93 leaves open is what a plain read of one wave reaches there at the decode's depth
# (the `wcp` rows at 3 stages).
# Expected (written before): ~86% of the ceiling at 160 MiB (session 40's Triton grid-256 read 86%), per-warp bulk
# copies (wbulk) 0.5-2% slower than per-warp cp.async (wcp), as on the H100. Then the decode itself at the same bytes
# on the same GPU (two bench.ab rounds, ~1.5 min with the build), so that the plain read and the decode are compared in
# one machine. Run from the repository root through scripts/gpu_offline.sh (carry .offline):
#   bash results/2026-12-05-h100-s49/probes/s49h.sh
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p $OUT/sp
t0=$SECONDS; timeout 200 python results/2026-12-05-h100-s49/probes/stream_probe.py --short > $OUT/sp/stream_probe.txt 2>&1
echo "stream probe rc=$? wall=$((SECONDS - t0))"
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $OUT/build.log 2>&1
P="--point 2x8x32768 --point 2x32x8192 --point 2x8x131072"
for r in 0 1; do timeout 60 python -m bench.ab run a $r /tmp/ab-a-$r.csv $P > $OUT/ab-a-$r.log 2>&1; echo "decode round $r rc=$?"; done
python -m bench.ab table /tmp/ab-a-*.csv > $OUT/ab-table.txt 2>&1; cat $OUT/ab-table.txt
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
cat $OUT/sp/stream_probe.txt

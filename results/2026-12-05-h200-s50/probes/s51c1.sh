#!/usr/bin/env bash
# QUEUED (session 50, not run): the decode with its loads out of DRAM's way, on an H200 first (on an H100 as the
# control, if that is what comes; ~6 min of device time with the builds and the stream probe below). Run from the
# repository root through scripts/gpu_offline.sh (carry .offline):   bash results/2026-12-05-h200-s50/probes/s51c1.sh
# Why: on the H200 a plain one-wave read at the decode's depth reaches 90.0% of the ceiling at 160 MiB and the decode
# 79-81% (bench/NOTES.md §94); on the H100 the two match (§93). `FOSCAR_L2_ONLY=1` ("l") copies every full sub-tile of a
# contiguous cache from the warp's first one: after the first step every copy is an L2 hit, so the loop runs its full
# work with no DRAM stream behind it (its outputs are wrong; the address arithmetic is a little shorter). Against the
# default ("t"), head_dim-128 builds, rounds t l l t t l.
# Expected (written before): if the decode is held by its own step (its work between waits, §94's reading), "l" is
# within ~5% of "t" at INT2 8 x 32K, 32 x 8K and 8 x 128K on the H200 (8 x 32K >= ~43.5 us where "t" is ~46); if it is
# the decode's request pattern in DRAM, "l" reaches the plain read's time or better (8 x 32K <= ~40.4 us, >= 12%
# faster). INT4 8 x 32K (memory-bound, §87's ncu) "l" >= 15% faster. On an H100 "l" <= 5% faster at the INT2 points (the
# decode there reads as fast as the plain read at its depth).
# First, before the builds (so that no compile shares the CPUs with its timing), the stream probe with the decode's six
# streams a warp (stream_probe6.py --six, ~1.5 min with its own build): per-warp cp.async from one stream (w-cp.async)
# against six (w-cp6: 2 KiB K codes, 2 KiB V codes, four 256-byte scale runs, as the decode's copies). Expected: w-cp6
# within 2 points of w-cp at 3 stages (90.0% at 160 MiB on session 50's H200); if it is 5 or more points lower, the
# decode's streams, not its step, are what the H200 lacks.
# Added in session 51, before it ran (six H200 starts refused, so on an H100, SKIP_STREAM_PROBE=1): the SMs, clock and
# L2 are the same die's on both GPUs, so "l"'s time (no DRAM stream) on an H100 is the decode's step-bound time on the
# H200 too. Expected: if the step holds the H200's one-wave points, H100 "l" at INT2 8 x 32K >= ~44 us (the H200's
# decode there: 45.7-46.1 us, §94; H100 "t" ~61.7 us, §95) and 32 x 8K >= ~43 us; if the H200 is held by its DRAM
# requests, "l" <= ~40 us (the H200's read at the decode's depth, 90.0% at 160 MiB: ~40.4 us). Between: both.
: "${T0:=$(date +%s)}"
left() { echo $((${LIMIT:-480} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
declare -A D=([t]="FOSCAR_ONLY_HEAD_DIM=128" [l]="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_L2_ONLY=1")
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__)'
if [ -z "$SKIP_STREAM_PROBE" ]; then
  t0=$SECONDS; timeout 200 python results/2026-12-05-h200-s50/probes/stream_probe6.py --six > /tmp/o/stream_probe6.txt 2>&1
  echo "stream probe rc=$? wall=$((SECONDS - t0)) left=$(left)"; cp /tmp/o/stream_probe6.txt $OUT/
fi
for m in t l; do (FOSCAR_NVCC_DEFINES="${D[$m]}" MAX_JOBS=8 python -c "$B" > /tmp/o/build_$m.log 2>&1) & done
wait; echo "built left=$(left): $(tail -1 /tmp/o/build_t.log) | $(tail -1 /tmp/o/build_l.log)"
P="--point 2x8x32768 --point 2x32x8192 --point 2x8x131072 --point 2x64x8192 --point 4x8x32768"
for m in t l l t t l; do
  [ $(left) -lt 30 ] && { echo "stop: left=$(left)"; break; }
  r=0; while [ -e /tmp/o/ab-$m-$r.csv ]; do r=$((r + 1)); done
  t0=$SECONDS; FOSCAR_NVCC_DEFINES="${D[$m]}" timeout $(( $(left) - 15 )) python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1
  echo "probe $m $r rc=$? wall=$((SECONDS - t0)) left=$(left)"
done
python -m bench.ab table /tmp/o/ab-t-*.csv /tmp/o/ab-l-*.csv --base t 2>&1 | tee /tmp/o/ab-table.txt; cp /tmp/o/ab-table.txt $OUT/
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/c1.tgz -C /tmp/o --exclude='*.so' .

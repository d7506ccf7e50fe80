#!/usr/bin/env bash
# QUEUED (session 52, no GPU lent; not run): the SM clock and the step's cycles of INT2's one-wave points, on an H200
# first (an H100 is the method's control). ~4-5 min of device time, builds included. Run from the repository root
# through scripts/gpu_offline.sh (carry .offline):   bash results/2026-12-05-h200-s52/probes/s53c1.sh
# It replaces session 50's s51c1.sh for the H200 (same A/B, now through bench.ab_rounds; its stream probe left out).
#
# Why (bench/NOTES.md §96, from records already in results/): the H200 ran these decodes at 1.68-1.81 GHz by their own
# clock64 / %globaltimer (sessions 43 and 48) and 1.78-1.80 GHz by ncu (sessions 10-43), while NVML read 1980 MHz
# before and after the bench's timings; the step alone (session 51's FOSCAR_L2_ONLY "l", every copy an L2 hit, on an
# H100 at 1980 MHz) at those clocks gives the H200's times. If so the H200's one-wave points are held by the step's
# cycles at the clock the power cap leaves, not by DRAM.
#
# Steps: (1) four head_dim-128 builds at once: t (default), l (FOSCAR_L2_ONLY=1), and both with FOSCAR_TIMELINE=1;
# (2) bench.timeline of t and of l at INT2 8 x 32K, 32 x 8K and INT4 8 x 32K (its SM MHz and loop_kcyc columns,
# records saved); (3) bench.ab_rounds t / l, rounds t l l t t l at five points (bench.ab's rows now hold NVML's clock
# every 5 ms during the timed calls: sm_clock_during_mhz).
#
# Expected (written before), on an H200:
# - timeline t: SM MHz 1680-1810 at INT2 8 x 32K and 32 x 8K (§96); INT2 8 x 32K loop_kcyc 70-76 (session 48's s0 calls
#   read 70.4-75.6).
# - timeline l: its loop_kcyc within 5% of t's at INT2 8 x 32K and 32 x 8K (the step's cycles hold those points, DRAM
#   adds none), and its SM MHz at or above t's (no DRAM traffic draws less power). INT4 8 x 32K: l's loop_kcyc
#   >= 30% below t's (INT4 is memory-bound there, §87's ncu).
# - ab_rounds: t's sm_clock_during_mhz 1680-1810 at the INT2 one-wave points if NVML sees what clock64 sees (if it
#   reads ~1980 there, NVML's readings miss the clock under load and the column says only that); l / t at INT2
#   8 x 32K and 32 x 8K = (t's clock / l's clock) within 5%: the time differs only by the clock.
# - Against that: l's loop_kcyc 10% or more below t's at INT2 8 x 32K would say DRAM holds part of the step on the
#   H200 after all (§95's "both together").
# On an H100 (the control): timeline SM MHz ~1980 at every point (else the clock64 / %globaltimer method is off);
# l's loop_kcyc ~0.65-0.70 of t's at the INT2 points (§95's l / t 0.65-0.68); NVML during ~1980.
: "${T0:=$(date +%s)}"
LIMIT="${LIMIT:-540}"
left() { echo $((LIMIT - ($(date +%s) - T0))); }
OUT="${OUT:?set OUT}"
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > "$OUT/gpu.csv" 2>&1
W=/tmp/s53; rm -rf $W; mkdir -p $W/tl-t $W/tl-l
HD="FOSCAR_ONLY_HEAD_DIM=128"
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__)'
# the exact FOSCAR_NVCC_DEFINES strings that bench.ab_rounds and bench.timeline will set (the build's name hashes them)
for defs in "$HD" "$HD FOSCAR_L2_ONLY=1" "$HD FOSCAR_TIMELINE=1" "$HD FOSCAR_L2_ONLY=1 FOSCAR_TIMELINE=1"; do
  (FOSCAR_NVCC_DEFINES="$defs" MAX_JOBS=4 python -c "$B" > "$W/build-${defs// /_}.log" 2>&1; echo "build [$defs] rc=$?") &
done
wait; echo "built left=$(left)"
TP="--point 2x8x32768 --point 2x32x8192 --point 4x8x32768"
for m in t l; do
  defs="$HD"; [ $m = l ] && defs="$HD FOSCAR_L2_ONLY=1"
  [ "$(left)" -lt 150 ] && { echo "skip timeline $m: left=$(left)"; continue; }
  FOSCAR_NVCC_DEFINES="$defs" timeout 120 python -m bench.timeline $TP --save $W/tl-$m > $W/timeline-$m.txt 2>&1
  echo "timeline $m rc=$? left=$(left)"; cp $W/timeline-$m.txt "$OUT/"
done
python -m bench.ab_rounds $W/ab --variant "t:$HD" --variant "l:$HD,FOSCAR_L2_ONLY=1" --order "t l l t t l" \
  --point 2x8x32768 --point 2x32x8192 --point 2x8x131072 --point 2x64x8192 --point 4x8x32768 \
  --limit-s $(( $(left) - 20 )) --round-s 25 2>&1 | tail -60
cp $W/ab/ab-table.txt "$OUT/" 2>/dev/null
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> "$OUT/gpu.csv" 2>&1
tar -czf "$OUT/s53c1.tgz" -C $W --exclude='*.so' .

#!/usr/bin/env bash
# QUEUED (session 52, no GPU lent; not run): what holds INT2's one-wave points on an H200 (an H100 is the control of
# the clock methods). ~7 min of device time, builds included, at most LIMIT (default 570) s. Run from the repository
# root through scripts/gpu_offline.sh (carry .offline):   bash results/2026-12-05-h200-s52/probes/s53c1.sh
# It replaces session 50's s51c1.sh for the H200 (its A/B, now through bench.ab_rounds, and its stream probe, plus
# timelines). SKIP_STREAM_PROBE=1 skips step (4).
#
# Why (bench/NOTES.md §96, from records already in results/): the H200 ran these decodes at 1.67-1.80 GHz by their own
# clock64 / %globaltimer (sessions 43, 48) and 1.78-1.80 GHz by ncu, but across 15 profiled calls the loop's time did
# not follow the clock (pooled slope of log us on log MHz -0.12 +- 0.24; -1 if SM cycles held it), and a CTA alone on
# its SM took 0.85-0.92 of the cycles of one sharing it. Within that range neither the SM clock nor the SMs' issue
# alone sets these points; what is left is the memory system's service of the decode's requests, DRAM or the L2. That
# reading needs the H100's "l" (no DRAM stream) to be held by the L2's service, not by SM cycles: not measured yet.
#
# Steps: (1) four head_dim-128 builds at once: t (default), l (FOSCAR_L2_ONLY=1: every copy an L2 hit), both with
# FOSCAR_TIMELINE=1; (2) bench.timeline of t and of l at INT2 8 x 32K, 32 x 8K, 1 x 8K (short CTAs: the clock
# methods' bias) and INT4 8 x 32K (SM MHz, loop us and loop_kcyc per call; records saved); (3) bench.ab_rounds t / l,
# rounds t l l t t l, five points (bench.ab's rows now hold NVML's clock every 20 ms during the timed replays:
# sm_clock_during_mhz); (4) if time is left, session 50's stream probe with the decode's six streams a warp
# (stream_probe6.py --six, never run; its own build): per-warp cp.async from one stream (w-cp) against six (w-cp6),
# 2 and 3 stages, spins of 0-3000 cycles a stage.
#
# Expected (written before), on an H200:
# - (2) t: SM MHz 1670-1810 at the INT2 one-wave points; loop 40.9-42.8 us at 8 x 32K and 32 x 8K (sessions 43/48:
#   40.96-42.74); over t's calls the loop's us do not follow the clock (slope of log us on log MHz above -0.5, read
#   from the saved records as clock_model.py reads them; uninformative where the calls' clocks span < 3%).
# - (2) l against t, compared at the same SM MHz (loop_kcyc): if the L2's service holds "l", l's loop is 10-20% below
#   t's in us and its us do not follow its clock either; if l's loop_kcyc equals t's at equal clocks, or l's us
#   follow its clock across calls, the SMs' cycles hold the loop and §96's reading is wrong. INT4 8 x 32K: l's loop
#   >= 30% below t's (memory-bound, §87).
# - (3): l / t at INT2 8 x 32K and 32 x 8K 0.80-0.92 (whole calls); t's sm_clock_during_mhz 1670-1810 if NVML sees
#   what clock64 sees (if it reads ~1980, NVML's readings miss the clock under load and the column says only that).
# - (4): w-cp6 within 2 points of w-cp at 2 stages and no spin (§89's one-buffer layout was level: six streams are not
#   it); with spin both lower, w-cp6 not more than 2 points below w-cp. The spins 0 / 1000 / 2000 / 3000 cycles a stage
#   bracket the decode's step (~2300 cycles with its waits: H100 "l"'s loop ~37 us / 32 steps x 1980 MHz; its work
#   between waits at most that): if that work is what holds the decode, w-cp at 2 stages and 2000 cycles reads 78-85%
#   at 160 MiB (the decode: 79-84%); if w-cp stays >= 87% there, the decode's work between waits is not it.
# On an H100: timeline SM MHz ~1980 at every point if the ratio is right; a lower reading is ambiguous (an H100 under
# its own 700 W cap) unless NVML during the timed calls reads ~1980 with no cap reason. l's loop ~0.6-0.7 of t's at the
# INT2 points (§95: whole calls 0.65-0.68).
: "${T0:=$(date +%s)}"
LIMIT="${LIMIT:-570}"
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
TP="--point 2x8x32768 --point 2x32x8192 --point 2x1x8192 --point 4x8x32768"
for m in t l; do
  defs="$HD"; [ $m = l ] && defs="$HD FOSCAR_L2_ONLY=1"
  [ "$(left)" -lt 200 ] && { echo "skip timeline $m: left=$(left)"; continue; }
  FOSCAR_NVCC_DEFINES="$defs" timeout 120 python -m bench.timeline $TP --save $W/tl-$m > $W/timeline-$m.txt 2>&1
  echo "timeline $m rc=$? left=$(left)"; cp $W/timeline-$m.txt "$OUT/"
done
R=$(( $(left) - 20 - 180 * (1 - ${SKIP_STREAM_PROBE:-0}) ))  # the stream probe's ~180 s kept for the end
[ "$R" -lt 100 ] && R=$(( $(left) - 20 ))  # too little for both: the A/B first
if [ "$R" -ge 40 ]; then
  python -m bench.ab_rounds $W/ab --variant "t:$HD" --variant "l:$HD,FOSCAR_L2_ONLY=1" --order "t l l t t l" \
    --point 2x8x32768 --point 2x32x8192 --point 2x8x131072 --point 2x64x8192 --point 4x8x32768 \
    --limit-s $R --round-s 25 > $W/ab_rounds.log 2>&1
  echo "ab_rounds rc=$? left=$(left)"; tail -60 $W/ab_rounds.log
else
  echo "skip ab_rounds: left=$(left)"
fi
cp $W/ab/ab-table.txt "$OUT/" 2>/dev/null
if [ -z "$SKIP_STREAM_PROBE" ] && [ "$(left)" -ge 120 ]; then  # last: no compile shares the CPUs with its timing
  t0=$SECONDS; timeout $(( $(left) - 15 )) python results/2026-12-05-h200-s50/probes/stream_probe6.py --six \
    --spins=0,1000,2000,3000 > $W/stream_probe6.txt 2>&1
  echo "stream probe rc=$? wall=$((SECONDS - t0)) left=$(left)"; cp $W/stream_probe6.txt "$OUT/"
else
  echo "skip stream probe: left=$(left)"
fi
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> "$OUT/gpu.csv" 2>&1
tar -czf "$OUT/s53c1.tgz" -C $W --exclude='*.so' .

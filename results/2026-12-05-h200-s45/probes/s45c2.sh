#!/usr/bin/env bash
# session 44 (no GPU lent): the call to run after ../2026-12-04-h200-s43/probes/s43c5.sh (one H200). Why INT2 64 x 32K's
# profiled call spans 1.32x the bench's median where four other points' first calls span 1.08-1.11x (NOTES §88): the
# timeline now records >= 3 back-to-back calls at one-copy points (bench.timeline.MIN_CALLS). Then 2 CTAs an SM against
# the plan's 3 there, in the timeline and in fixed split counts; then the GPU suite. Prediction: s44c2.note.
: "${T0:=$(date +%s)}"  # (the device call sets T0 and LIMIT; run alone, from now)
left() { echo $((${LIMIT:-570} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__)'
(MAX_JOBS=11 python -c "$B" > /tmp/o/build_d.log 2>&1) &
(FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_TIMELINE=1" MAX_JOBS=5 python -c "$B" > /tmp/o/build_t.log 2>&1) &
wait; echo "built left=$(left): $(tail -1 /tmp/o/build_d.log) | $(tail -1 /tmp/o/build_t.log)"
for x in auto 2; do
  FOSCAR_MAX_CTAS_PER_SM=$x FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128" timeout 120 python -m bench.timeline \
    --point 2x64x32768 --point 4x64x32768 --point 2x32x32768 --save /tmp/o/tl-$x > /tmp/o/timeline-$x.log 2>&1
  echo "timeline $x rc=$? left=$(left)"; tail -16 /tmp/o/timeline-$x.log
done
python results/2026-12-04-h200-s44/probes/tl_waves_calls.py /tmp/o/tl-auto /tmp/o/tl-2 2>&1 | tee /tmp/o/waves.txt
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
for x in auto 2; do
  [ $(left) -lt 200 ] && { echo "stop: left=$(left)"; break; }
  FOSCAR_MAX_CTAS_PER_SM=$x timeout 100 python scripts/split_sweep.py /tmp/o/ss-$x --bits 2 --batch 64 --context 32768 \
    --splits 1 --splits 2 --splits 3 --splits 4 > /tmp/o/ss-$x.log 2>&1; echo "sweep $x rc=$? left=$(left)"; tail -1 /tmp/o/ss-$x.log
done
[ $(left) -gt 150 ] && { timeout $(( $(left) - 15 )) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests > /tmp/o/tests.log 2>&1; echo "gpu suite rc=$? left=$(left)"; tail -3 /tmp/o/tests.log; }
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/c2.tgz -C /tmp/o --exclude='*.so' .

#!/usr/bin/env bash
# session 43, call 1 (one H200): issue 12's short points on the token-pairs kernel (b2d47b7): per-CTA timelines
# (bench.timeline, head_dim-128 profiling build) and fixed split counts (scripts/split_sweep.py, default build).
left() { echo $((${LIMIT:-570} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__)'
(MAX_JOBS=11 python -c "$B" > /tmp/o/build_d.log 2>&1) &
(FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_TIMELINE=1" MAX_JOBS=5 python -c "$B" > /tmp/o/build_t.log 2>&1) &
wait; echo "built left=$(left): $(tail -1 /tmp/o/build_d.log) | $(tail -1 /tmp/o/build_t.log)"
FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128" timeout 150 python -m bench.timeline --point 2x8x32768 --point 2x32x8192 --point 2x64x8192 --point 2x64x32768 --point 2x8x131072 --save /tmp/o/tl > /tmp/o/timeline.log 2>&1; echo "timeline rc=$? left=$(left)"; cat /tmp/o/timeline.log | tail -60
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
for a in "8 32768 --splits 4 --splits 5 --splits 6 --splits 8" "32 8192 --splits 1 --splits 2" "64 8192 --splits 1 --splits 2" "64 32768 --splits 1 --splits 2"; do
  set -- $a; b=$1; c=$2; shift 2
  [ $(left) -lt 40 ] && { echo "stop: left=$(left)"; break; }
  timeout 90 python scripts/split_sweep.py /tmp/o/ss-$b-$c --bits 2 --batch $b --context $c "$@" > /tmp/o/ss-$b-$c.log 2>&1; echo "sweep $b x $c rc=$? left=$(left)"; tail -1 /tmp/o/ss-$b-$c.log
done
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/c1.tgz -C /tmp/o --exclude='*.so' .

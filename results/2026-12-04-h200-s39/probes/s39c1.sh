#!/usr/bin/env bash
# session 39, call 1 (one H200): issue 12's block-by-block cache layout on the real kernel. "n": this tree's
# head_dim-128 build, the usual layout; "b": the same tree built with FOSCAR_BLOCKED=1, every point's cache handed
# over re-laid out block by block (.ab/blocked.py, PROBE_BLOCKED=1). Rounds n b b n, then b n if time is left.
left() { echo $((${LIMIT:-570} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__)'
(FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128" MAX_JOBS=8 python -c "$B" > /tmp/o/build_n.log 2>&1) &
(FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_BLOCKED=1" MAX_JOBS=8 python -c "$B" > /tmp/o/build_b.log 2>&1) &
wait; echo "built left=$(left): $(tail -1 /tmp/o/build_n.log) | $(tail -1 /tmp/o/build_b.log)"
P="--point 2x8x32768 --point 2x32x8192 --point 2x64x8192 --point 2x8x131072 --point 2x32x32768 --point 2x64x32768 --point 2x8x32768:paged --point 2x64x32768:paged --point 4x8x32768 --point 2x1x32768"
for m in n b b n b n; do
  [ $(left) -lt 100 ] && { echo "stop: left=$(left)"; break; }
  r=0; while [ -e /tmp/o/ab-$m-$r.csv ]; do r=$((r + 1)); done
  if [ $m = b ]; then
    PROBE_BLOCKED=1 FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_BLOCKED=1" timeout 100 python .ab/blocked.py run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1
  else
    FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128" timeout 100 python .ab/blocked.py run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1
  fi
  echo "probe $m $r rc=$? left=$(left)"
  nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> /tmp/o/smi.txt 2>&1
done
python -m bench.ab table /tmp/o/ab-n-*.csv /tmp/o/ab-b-*.csv --base n | tee /tmp/o/ab-table.txt; cp /tmp/o/ab-table.txt $OUT/
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/c1.tgz -C /tmp/o .

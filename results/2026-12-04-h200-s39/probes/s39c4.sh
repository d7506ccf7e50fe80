#!/usr/bin/env bash
# session 39, call 4 (one H200): the in-kernel merge of 17-32 chunks in one round (merge_rows_warp). A/B "o" (d662693
# from .ab/base: two rounds of 16 loads) against "n" (this tree), both head_dim-128 builds; "k": n's build with the
# merge kernel (FOSCAR_MERGE=kernel). Rounds o n k n o k. Then the default build and the fused-merge GPU tests.
left() { echo $((${LIMIT:-570} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__)'
D="FOSCAR_ONLY_HEAD_DIM=128"
(FOSCAR_NVCC_DEFINES="$D" MAX_JOBS=8 python -c "$B" > /tmp/o/build_n.log 2>&1) &
(cd .ab/base && FOSCAR_NVCC_DEFINES="$D" MAX_JOBS=8 python -c "$B" > /tmp/o/build_o.log 2>&1) &
wait; echo "built left=$(left): $(tail -1 /tmp/o/build_n.log) | $(tail -1 /tmp/o/build_o.log)"
P="--point 2x1x32768 --point 2x1x131072 --point 2x1x8192 --point 4x1x32768 --point 4x1x131072 --point 2x1x32768:paged --point 2x8x131072:one-long --point 2x8x32768"
for m in o n k n o k; do
  [ $(left) -lt 250 ] && { echo "stop: left=$(left)"; break; }
  r=0; while [ -e /tmp/o/ab-$m-$r.csv ]; do r=$((r + 1)); done
  if [ $m = o ]; then
    (cd .ab/base && FOSCAR_NVCC_DEFINES="$D" timeout 80 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1)
  elif [ $m = k ]; then
    FOSCAR_MERGE=kernel FOSCAR_NVCC_DEFINES="$D" timeout 80 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1
  else
    FOSCAR_NVCC_DEFINES="$D" timeout 80 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1
  fi
  echo "probe $m $r rc=$? left=$(left)"
done
python -m bench.ab table /tmp/o/ab-o-*.csv /tmp/o/ab-n-*.csv /tmp/o/ab-k-*.csv --base o | tee /tmp/o/ab-table.txt; cp /tmp/o/ab-table.txt $OUT/
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
MAX_JOBS=15 python -c "$B" > /tmp/o/build.log 2>&1; echo "default build left=$(left): $(tail -1 /tmp/o/build.log)"
timeout $(( $(left) - 15 )) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_fused_merge_gpu.py tests/test_ragged_gpu.py > /tmp/o/tests.log 2>&1; echo "tests rc=$? left=$(left)"; grep -E '^(FAILED|ERROR)' /tmp/o/tests.log | head -20; tail -3 /tmp/o/tests.log
gzip -c /tmp/o/tests.log > $OUT/tests.log.gz; tar -czf $OUT/c4.tgz -C /tmp/o .

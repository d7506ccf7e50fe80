#!/usr/bin/env bash
# session 36, call 5 (one H200): HEAD's fused merge (8 or 16 chunks in flight by the sequence's chunk count) in a
# FOSCAR_FUSED_MERGE=1 build of every head_dim: bench.ab rounds k f f k ("k" the merge kernel, "f" the fused merge,
# each plan reading FOSCAR_MERGE); latency_floor; the whole GPU suite with plans merging in the kernel.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
export FOSCAR_NVCC_DEFINES="FOSCAR_FUSED_MERGE=1"
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__, d.FUSED_MERGE_BUILT)'
MAX_JOBS=15 python -c "$B" > /tmp/o/build.log 2>&1; echo "built t=$SECONDS: $(tail -1 /tmp/o/build.log)"
P="--point 2x1x16 --point 2x1x8192 --point 2x1x32768 --point 2x1x131072 --point 2x8x4096 --point 2x8x8192 --point 2x8x32768 --point 2x8x32768:lognormal --point 2x8x32768:one-long --point 2x32x8192 --point 4x1x8192 --point 4x8x32768 --point 2x1x32768:paged --point 2x64x8192:lognormal"
for m in k f f k; do
  r=0; while [ -e /tmp/o/ab-$m-$r.csv ]; do r=$((r + 1)); done
  if [ $m = k ]; then M=kernel; else M=fused; fi
  FOSCAR_MERGE=$M timeout 70 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1
  echo "probe $m $r rc=$? t=$SECONDS"
done
python -m bench.ab table /tmp/o/ab-k-*.csv /tmp/o/ab-f-*.csv --base k | tee /tmp/o/ab-table.txt; cp /tmp/o/ab-table.txt $OUT/
tar -czf $OUT/c5.tgz -C /tmp/o .
timeout 60 python scripts/latency_floor.py /tmp/o/floor 1x8192 1x32768 8x8192 32x8192 > /tmp/o/floor.log 2>&1; echo "floor rc=$? t=$SECONDS"; tail -10 /tmp/o/floor.log; cp /tmp/o/floor.log $OUT/
FOSCAR_MERGE=fused timeout $((590 - SECONDS)) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/ > /tmp/o/tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; grep -E '^(FAILED|ERROR)' /tmp/o/tests.log | head -30; tail -2 /tmp/o/tests.log; gzip -c /tmp/o/tests.log > $OUT/tests.log.gz
tar -czf $OUT/c5.tgz -C /tmp/o .

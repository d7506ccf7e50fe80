#!/usr/bin/env bash
# session 36, call 2 (one H200): the fused split merge (FOSCAR_FUSED_MERGE=1 build, last CTA of a sequence merges)
# against the merge kernel (the default) on HEAD's kernel, both from one head_dim-128 build (each plan reads
# FOSCAR_MERGE): scripts/latency_floor.py's empty decode (issue 11's fixed cost) and decodes at the split points,
# python -m bench.ab rounds k f f k; tests/test_fused_merge_gpu.py on the build.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
export FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_FUSED_MERGE=1"
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__, d.FUSED_MERGE_BUILT)'
MAX_JOBS=14 python -c "$B" > /tmp/o/build.log 2>&1; echo "built t=$SECONDS: $(tail -1 /tmp/o/build.log)"
P="--point 2x1x16 --point 2x1x8192 --point 2x1x32768 --point 2x1x131072 --point 2x8x4096 --point 2x8x8192 --point 2x8x32768 --point 2x8x32768:lognormal --point 2x8x32768:one-long --point 2x32x8192 --point 4x1x8192 --point 4x8x32768"
for m in k f f k; do
  r=0; while [ -e /tmp/o/ab-$m-$r.csv ]; do r=$((r + 1)); done
  if [ $m = k ]; then M=kernel; else M=fused; fi
  FOSCAR_MERGE=$M timeout 70 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1
  echo "probe $m $r rc=$? t=$SECONDS"
done
python -m bench.ab table /tmp/o/ab-k-*.csv /tmp/o/ab-f-*.csv --base k | tee /tmp/o/ab-table.txt; cp /tmp/o/ab-table.txt $OUT/
tar -czf $OUT/c2.tgz -C /tmp/o .
timeout 150 python .ab/floor.py /tmp/o/floor > /tmp/o/floor.log 2>&1; echo "floor rc=$? t=$SECONDS"; tail -14 /tmp/o/floor.log; cp /tmp/o/floor.log $OUT/
FOSCAR_MERGE=fused timeout $((570 - SECONDS)) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_fused_merge_gpu.py > /tmp/o/tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -6 /tmp/o/tests.log; cp /tmp/o/tests.log $OUT/
tar -czf $OUT/c2.tgz -C /tmp/o .

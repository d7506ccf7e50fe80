#!/usr/bin/env bash
# session 36, call 3 (one H200): the fused merge rewritten (merge_chunks from registers) against session 10's form
# (.ab/base = HEAD~1) and against the merge kernel: "k" the merge kernel (new tree), "o" the old fused merge (base
# tree), "f" the new fused merge; FOSCAR_FUSED_MERGE=1 builds (new: every head_dim, for the tests; base: head_dim 128);
# bench.ab rounds k o f f o k; latency_floor (empty decode) on the new build; the fused-merge and ragged GPU tests with
# plans merging in the kernel.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__, d.FUSED_MERGE_BUILT)'
(FOSCAR_NVCC_DEFINES="FOSCAR_FUSED_MERGE=1" MAX_JOBS=11 python -c "$B" > /tmp/o/build_n.log 2>&1) &
(cd .ab/base && FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_FUSED_MERGE=1" MAX_JOBS=5 python -c "$B" > /tmp/o/build_o.log 2>&1) &
wait; echo "built t=$SECONDS: $(tail -1 /tmp/o/build_n.log) / $(tail -1 /tmp/o/build_o.log)"
P="--point 2x1x16 --point 2x1x8192 --point 2x1x32768 --point 2x1x131072 --point 2x8x4096 --point 2x8x8192 --point 2x8x32768 --point 2x8x32768:lognormal --point 2x8x32768:one-long --point 2x32x8192 --point 4x1x8192 --point 4x8x32768 --point 2x1x32768:paged"
for m in k o f f o k; do
  r=0; while [ -e /tmp/o/ab-$m-$r.csv ]; do r=$((r + 1)); done
  case $m in
    k) FOSCAR_NVCC_DEFINES="FOSCAR_FUSED_MERGE=1" FOSCAR_MERGE=kernel timeout 70 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1;;
    f) FOSCAR_NVCC_DEFINES="FOSCAR_FUSED_MERGE=1" FOSCAR_MERGE=fused timeout 70 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1;;
    o) (cd .ab/base && FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_FUSED_MERGE=1" FOSCAR_MERGE=fused timeout 70 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1);;
  esac
  echo "probe $m $r rc=$? t=$SECONDS"
done
python -m bench.ab table /tmp/o/ab-k-*.csv /tmp/o/ab-o-*.csv /tmp/o/ab-f-*.csv --base k | tee /tmp/o/ab-table.txt; cp /tmp/o/ab-table.txt $OUT/
tar -czf $OUT/c3.tgz -C /tmp/o .
FOSCAR_NVCC_DEFINES="FOSCAR_FUSED_MERGE=1" timeout 120 python scripts/latency_floor.py /tmp/o/floor 1x8192 1x32768 8x8192 8x32768 32x8192 > /tmp/o/floor.log 2>&1; echo "floor rc=$? t=$SECONDS"; tail -12 /tmp/o/floor.log; cp /tmp/o/floor.log $OUT/
FOSCAR_NVCC_DEFINES="FOSCAR_FUSED_MERGE=1" FOSCAR_MERGE=fused timeout $((580 - SECONDS)) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_fused_merge_gpu.py tests/test_ragged_gpu.py > /tmp/o/tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -8 /tmp/o/tests.log; cp /tmp/o/tests.log $OUT/
tar -czf $OUT/c3.tgz -C /tmp/o .

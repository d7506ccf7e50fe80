#!/usr/bin/env bash
# session 11, call B (one H200): A/B of FOSCAR_KV_PREFETCH (base, kvpf, base again) at batch 1 and 8
# (uniform at capacity; paged rows are the control: the prefetch is contiguous-only), then the same on 8 x 4K in a
# 128K cache (where the guess is wrong). Then latency_floor.py
# (decode + merge, one-round against two-round merge, in one process), the GPU tests of the merge and ragged batches.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
export FOSCAR_AB_SECONDS=60
export FOSCAR_AB="base: kvpf:FOSCAR_KV_PREFETCH=1,FOSCAR_ONLY_HEAD_DIM=128 base2:"
OUT=/tmp/o/u timeout 260 bash scripts/gpu_ab.sh --arch h200 --kernel foscar-cuda --kernel foscar-cuda-paged --operand bf16 --bits 2 --bits 4 --batch 1 --batch 8 --context 8192 --context 32768 --context 131072 --grid sweep --format quiet > /tmp/o/ab-uniform.log 2>&1; echo "ab uniform rc=$? t=$SECONDS"
sed -n '/^variant/,$p' /tmp/o/ab-uniform.log | head -30
export FOSCAR_AB_SECONDS=40
OUT=/tmp/o/c timeout 150 bash scripts/gpu_ab.sh --arch h200 --kernel foscar-cuda --kernel foscar-cuda-paged --operand bf16 --bits 2 --bits 4 --batch 8 --context 4096 --workload capacity --capacity 131072 --grid sweep --format quiet > /tmp/o/ab-capacity.log 2>&1; echo "ab capacity rc=$? t=$SECONDS"
sed -n '/^variant/,$p' /tmp/o/ab-capacity.log | head -16
unset FOSCAR_AB
timeout 100 python scripts/latency_floor.py /tmp/o/floor > /tmp/o/floor.log 2>&1; echo "floor rc=$? t=$SECONDS"; tail -30 /tmp/o/floor.log
tar -czf $OUT/b1.tgz -C /tmp o
timeout $((545 - SECONDS)) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_merge_slots.py tests/test_ragged_gpu.py > /tmp/o/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -3 /tmp/o/gpu_tests.log
nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/b2.tgz -C /tmp/o gpu_tests.log
echo "t=$SECONDS"

#!/usr/bin/env bash
# session 10, call D: the fused merge (second attempt) against the merge kernel, one build with both:
# GPU tests with the fused merge, latency_floor (both merges), then the full bench with each merge
K="--operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --kernel flashinfer-fa2-tc-fp8 --kernel flashinfer-xqa-fp8"
export FOSCAR_NVCC_DEFINES=FOSCAR_FUSED_MERGE=1
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__, d.FUSED_MERGE_BUILT)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
FOSCAR_MERGE=fused timeout 100 python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_fused_merge_gpu.py tests/test_ragged_gpu.py > /tmp/o/gpu_tests_fused.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -3 /tmp/o/gpu_tests_fused.log
timeout 60 python scripts/latency_floor.py /tmp/o/lf > /tmp/o/lf.log 2>&1; echo "lf rc=$? t=$SECONDS"; tail -20 /tmp/o/lf.log
FOSCAR_MERGE=kernel timeout 200 foscar bench --arch h200 $K --out /tmp/o/bench-kernel > /tmp/o/bench-kernel.log 2>&1; echo "bench kernel rc=$? t=$SECONDS"
grep -A7 "geomean\|Geomean" /tmp/o/bench-kernel.log | head -24
nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
FOSCAR_MERGE=fused timeout $((592 - SECONDS)) foscar bench --arch h200 $K --out /tmp/o/bench-fused > /tmp/o/bench-fused.log 2>&1; echo "bench fused rc=$? t=$SECONDS"
grep -A7 "geomean\|Geomean" /tmp/o/bench-fused.log | head -24
nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/d.tgz -C /tmp o
echo "t=$SECONDS"

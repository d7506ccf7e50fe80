#!/usr/bin/env bash
# session 11, call D (one H200): the full bench on the final main (the kernel body in phase functions, the merge's
# table in one load), then the GPU tests of the kernel, the merge and ragged batches (all 184 instances' compile
# against the SASS snapshot among them).
K="--operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --kernel flashinfer-fa2-tc-fp8 --kernel flashinfer-xqa-fp8"
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
t0=$SECONDS; timeout 220 foscar bench --arch h200 $K --out /tmp/o/bench > /tmp/o/bench.log 2>&1; echo "bench rc=$? wall=$((SECONDS - t0)) s t=$SECONDS"
grep -A8 "geomean\|Geomean" /tmp/o/bench.log | head -40
nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/d1.tgz -C /tmp/o bench bench.log
timeout $((570 - SECONDS)) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_decode_cuda.py tests/test_ragged_gpu.py tests/test_merge_slots.py tests/test_paged.py tests/test_channel_k.py tests/test_bad_inputs.py > /tmp/o/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -4 /tmp/o/gpu_tests.log
tar -czf $OUT/d2.tgz -C /tmp/o gpu_tests.log
echo "t=$SECONDS"

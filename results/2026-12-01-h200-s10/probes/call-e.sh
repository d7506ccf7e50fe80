#!/usr/bin/env bash
# session 10, call E: the full bench on the final main (merge kernel, find_work one-pass, INT4 split rule reverted), then kernel GPU tests
K="--operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --kernel flashinfer-fa2-tc-fp8 --kernel flashinfer-xqa-fp8"
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
timeout 200 foscar bench --arch h200 $K --out /tmp/o/bench > /tmp/o/bench.log 2>&1; echo "bench rc=$? t=$SECONDS"
grep -A8 "geomean\|Geomean" /tmp/o/bench.log | head -40
nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
timeout $((318 - SECONDS)) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider -k "not compiles" tests/test_ragged_gpu.py tests/test_decode_cuda.py > /tmp/o/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -3 /tmp/o/gpu_tests.log
tar -czf $OUT/e.tgz -C /tmp o
echo "t=$SECONDS"

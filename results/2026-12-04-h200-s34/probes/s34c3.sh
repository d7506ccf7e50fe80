#!/usr/bin/env bash
# session 34, call 3 (one H200), on HEAD (the one-chunk path for token-wise K only): the default build, the fixed cost
# (16-token sequences), the bench (session 32's kernel subset), then the GPU suite in the time left.
K="--operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --kernel flashinfer-fa2-tc-fp8 --kernel flashinfer-xqa-fp8"
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__)'
MAX_JOBS=16 python -c "$B" > /tmp/o/build_full.log 2>&1; echo "built t=$SECONDS: $(tail -1 /tmp/o/build_full.log)"
t0=$SECONDS; timeout 45 foscar bench --arch h200 --operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --bits 2 --bits 4 --batch 1 --batch 8 --batch 64 --context 16 --grid sweep --format quiet --out /tmp/o/ctx16 > /tmp/o/ctx16.log 2>&1; echo "ctx16 rc=$? wall=$((SECONDS - t0)) s t=$SECONDS"
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
t0=$SECONDS; timeout 230 foscar bench --arch h200 $K --out /tmp/o/bench > /tmp/o/bench.log 2>&1; echo "bench rc=$? wall=$((SECONDS - t0)) s t=$SECONDS"
grep -i "HBM ceiling" /tmp/o/bench.log; grep -A8 -i "geometric" /tmp/o/bench.log | head -30
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/c3.tgz -C /tmp/o bench bench.log ctx16 ctx16.log build_full.log
timeout $((590 - SECONDS)) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_decode_cuda.py tests/test_channel_k.py tests/test_ragged_gpu.py > /tmp/o/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -6 /tmp/o/gpu_tests.log
cp /tmp/o/gpu_tests.log $OUT/

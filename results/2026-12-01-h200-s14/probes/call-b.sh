#!/usr/bin/env bash
# session 14, call B (one H200), on main with the merge launched with PDL by default (NOTES §43):
# (1) the full build and the GPU tests of the merge, the ragged schedule and paged caches (under the new default);
# (2) the full bench (the s6 kernel subset, BF16 operands, FlashInfer's five baselines);
# (3) the fixed cost at 16-token sequences, batch 1 / 8 / 64, FOSCAR and FlashInfer (as NOTES §36, §41);
# (4) the rest of the GPU suite in what time is left.
K="--operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --kernel flashinfer-fa2-tc-fp8 --kernel flashinfer-xqa-fp8"
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; echo "full build rc=$? t=$SECONDS" | tee -a /tmp/o/build.log
timeout 100 python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_merge_slots.py tests/test_ragged_gpu.py tests/test_paged.py > /tmp/o/gpu_tests1.log 2>&1; echo "tests1 rc=$? t=$SECONDS"; tail -3 /tmp/o/gpu_tests1.log
tar -czf $OUT/b0.tgz -C /tmp/o gpu_tests1.log build.log
t0=$SECONDS; timeout 260 foscar bench --arch h200 $K --out /tmp/o/bench > /tmp/o/bench.log 2>&1; echo "bench rc=$? wall=$((SECONDS - t0)) s t=$SECONDS"
grep -A8 "geomean\|Geomean" /tmp/o/bench.log | head -40
nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/b1.tgz -C /tmp/o bench bench.log
t0=$SECONDS; timeout 70 foscar bench --arch h200 --operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --bits 2 --bits 4 --batch 1 --batch 8 --batch 64 --context 16 --grid sweep --out /tmp/o/ctx16 > /tmp/o/ctx16.log 2>&1; echo "ctx16 rc=$? wall=$((SECONDS - t0)) s t=$SECONDS"
tar -czf $OUT/b2.tgz -C /tmp/o ctx16 ctx16.log
left=$((585 - SECONDS))
[ $left -gt 40 ] && { timeout $left python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_decode_cuda.py tests/test_plan.py tests/test_decode_triton.py tests/test_append.py tests/test_channel_k.py tests/test_bad_inputs.py > /tmp/o/gpu_tests2.log 2>&1; echo "tests2 rc=$? t=$SECONDS"; tail -3 /tmp/o/gpu_tests2.log; tar -czf $OUT/b3.tgz -C /tmp/o gpu_tests2.log; }
echo "t=$SECONDS"

#!/usr/bin/env bash
# session 39, call 5 (one H200, the default build of the final kernel): the fused-merge GPU tests (the one-round
# merge's, extended after a review), foscar bench (session 37's kernel subset), then the rest of the GPU suite with
# the time left.
left() { echo $((${LIMIT:-560} - ($(date +%s) - T0))); }
K="--operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --kernel flashinfer-fa2-tc-fp8 --kernel flashinfer-xqa-fp8"
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__, d.FUSED_MERGE_BUILT)'
MAX_JOBS=15 python -c "$B" > /tmp/o/build.log 2>&1; echo "built left=$(left): $(tail -1 /tmp/o/build.log)"
timeout 100 python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_fused_merge_gpu.py > /tmp/o/tests1.log 2>&1; echo "tests1 rc=$? left=$(left)"; grep -E '^(FAILED|ERROR)' /tmp/o/tests1.log | head; tail -1 /tmp/o/tests1.log
t0=$SECONDS; timeout 200 foscar bench --arch h200 $K --out /tmp/o/bench > /tmp/o/bench.log 2>&1; echo "bench rc=$? wall=$((SECONDS - t0)) s left=$(left)"
grep -i "HBM ceiling" /tmp/o/bench.log; grep -A8 -i "geometric" /tmp/o/bench.log | head -24
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/c5.tgz -C /tmp/o bench bench.log build.log tests1.log
if [ $(left) -gt 40 ]; then
  timeout $(( $(left) - 12 )) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider --ignore tests/test_fused_merge_gpu.py --ignore tests/test_ragged_gpu.py tests/ > /tmp/o/tests2.log 2>&1; echo "tests2 rc=$? left=$(left)"; grep -E '^(FAILED|ERROR)' /tmp/o/tests2.log | head -20; tail -2 /tmp/o/tests2.log
  gzip -c /tmp/o/tests2.log > $OUT/tests2.log.gz
fi

#!/usr/bin/env bash
# session 37, call 1 (one H200), on branch fused-default (the fused merge compiled in and planned by default):
# default build of every head_dim; latency_floor (empty decode, fused vs merge kernel); the bench (session 35's
# kernel subset) against session 35's; the 16-token sweep; then the whole GPU suite with the time left.
left() { echo $((${LIMIT:-570} - ($(date +%s) - T0))); }
K="--operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --kernel flashinfer-fa2-tc-fp8 --kernel flashinfer-xqa-fp8"
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__, d.FUSED_MERGE_BUILT)'
MAX_JOBS=15 python -c "$B" > /tmp/o/build.log 2>&1; echo "built left=$(left): $(tail -1 /tmp/o/build.log)"
timeout 60 python scripts/latency_floor.py /tmp/o/floor 1x8192 1x32768 8x8192 8x32768 32x8192 > /tmp/o/floor.log 2>&1; echo "floor rc=$? left=$(left)"; tail -12 /tmp/o/floor.log; cp /tmp/o/floor.log $OUT/
t0=$SECONDS; timeout 200 foscar bench --arch h200 $K --out /tmp/o/bench > /tmp/o/bench.log 2>&1; echo "bench rc=$? wall=$((SECONDS - t0)) s left=$(left)"
grep -i "HBM ceiling" /tmp/o/bench.log; grep -A8 -i "geometric" /tmp/o/bench.log | head -30
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/c1.tgz -C /tmp/o bench bench.log build.log floor
t0=$SECONDS; timeout 90 foscar bench --arch h200 --operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --bits 2 --bits 4 --batch 1 --batch 8 --batch 64 --context 16 --grid sweep --format quiet --out /tmp/o/ctx16 > /tmp/o/ctx16.log 2>&1; echo "ctx16 rc=$? wall=$((SECONDS - t0)) s left=$(left)"
tar -czf $OUT/c1.tgz -C /tmp/o bench bench.log ctx16 ctx16.log build.log floor
timeout $(left) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider --durations=15 tests/ > /tmp/o/tests.log 2>&1; echo "tests rc=$? left=$(left)"; grep -E '^(FAILED|ERROR)' /tmp/o/tests.log | head -30; tail -22 /tmp/o/tests.log; gzip -c /tmp/o/tests.log > $OUT/tests.log.gz

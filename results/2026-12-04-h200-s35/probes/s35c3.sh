#!/usr/bin/env bash
# session 35, call 3 (one H200), on HEAD (the two-dimensional grid for token-wise K): the default build, the bench
# (session 32's kernel subset), the fixed cost (16-token sequences, after the bench has warmed FlashInfer's JIT), the
# timeline of a head_dim-128 timeline build at the 16-token points.
K="--operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --kernel flashinfer-fa2-tc-fp8 --kernel flashinfer-xqa-fp8"
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__)'
(MAX_JOBS=12 python -c "$B" > /tmp/o/build_full.log 2>&1) &
(FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_TIMELINE=1" MAX_JOBS=4 python -c "$B" > /tmp/o/build_tl.log 2>&1) &
wait; echo "built t=$SECONDS: $(tail -1 /tmp/o/build_full.log) $(tail -1 /tmp/o/build_tl.log)"
t0=$SECONDS; timeout 250 foscar bench --arch h200 $K --out /tmp/o/bench > /tmp/o/bench.log 2>&1; echo "bench rc=$? wall=$((SECONDS - t0)) s t=$SECONDS"
grep -i "HBM ceiling" /tmp/o/bench.log; grep -A8 -i "geometric" /tmp/o/bench.log | head -30
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/c3.tgz -C /tmp/o bench bench.log build_full.log
t0=$SECONDS; timeout 100 foscar bench --arch h200 --operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --bits 2 --bits 4 --batch 1 --batch 8 --batch 64 --context 16 --grid sweep --format quiet --out /tmp/o/ctx16 > /tmp/o/ctx16.log 2>&1; echo "ctx16 rc=$? wall=$((SECONDS - t0)) s t=$SECONDS"
tar -czf $OUT/c3.tgz -C /tmp/o bench bench.log ctx16 ctx16.log build_full.log
FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_TIMELINE=1" timeout $((540 - SECONDS)) python -m bench.timeline --point 1x16 --point 8x16 --point 4x1x16 > /tmp/o/tl.log 2>&1; echo "tl rc=$? t=$SECONDS"
grep -v "^ *[2-7] " /tmp/o/tl.log | tail -20; cp /tmp/o/tl.log $OUT/
timeout $((590 - SECONDS)) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_ragged_gpu.py -k "paged_rows_past or more_slots" > /tmp/o/tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -4 /tmp/o/tests.log; cp /tmp/o/tests.log $OUT/

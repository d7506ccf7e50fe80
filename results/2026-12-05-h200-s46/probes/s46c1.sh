#!/usr/bin/env bash
# session 46, call 1 (one H200): the whole h200 preset with FlashInfer (first since session 42: the tree now fits beside
# its wheels), on main 479c43a = session 45's rule (INT2 contiguous: chunks up to 32K at 2 CTAs an SM), then the GPU
# tests that make and run plans (session 45's unrun s45c5.sh).
# Expected (written before): foscar-cuda/int2/bf16 uniform geomean vs FlashInfer BF16 at its best 4.95-5.10x (s42 5.00x;
# 5.02x by arithmetic on s42's baseline times); INT2 64 x 32K 5.6-6.0x (s42 5.50x); INT4 3.20-3.25x (s42 3.22x); paged
# INT2 4.6-4.7x; ragged INT2 4.5-4.7x (s42 4.57x); FlashInfer's own times within ~3% of s42's at each point; max_rel_err
# <= 2e-3 for BF16 operands; INT2 at >= 256K: 5 of 8 at 85% of the ceiling (8 x 32K ~80%, 32 x 8K ~84%, 64 x 8K ~84%).
: "${T0:=$(date +%s)}"
left() { echo $((${LIMIT:-570} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
python -c 'import flashinfer; print("flashinfer", flashinfer.__version__)' 2>&1 | tail -1
rm -rf /tmp/o; mkdir -p /tmp/o
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > /tmp/o/build.log 2>&1; echo "built left=$(left): $(tail -1 /tmp/o/build.log)"
timeout $(( $(left) - 100 )) foscar bench --arch h200 --operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --kernel flashinfer-fa2-tc-fp8 --kernel flashinfer-xqa-fp8 --read-floor --out /tmp/o/bench --format quiet > /tmp/o/bench.log 2>&1; echo "bench rc=$? left=$(left)"; tail -3 /tmp/o/bench.log
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/c1.tgz -C /tmp/o --exclude='*.so' .
timeout $(( $(left) - 10 )) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_splits.py tests/test_merge_slots.py tests/test_ragged_gpu.py tests/test_bench_workloads.py tests/test_paged.py tests/test_append.py tests/test_bad_inputs_append.py > $OUT/tests.log 2>&1; echo "tests rc=$? left=$(left)"; tail -3 $OUT/tests.log

#!/usr/bin/env bash
# session 45, call 5: the GPU tests that make and run plans, on the final rule (INT2-only 32K bound by bit width).
: "${T0:=$(date +%s)}"
left() { echo $((${LIMIT:-300} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv > $OUT/gpu.csv 2>&1
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $OUT/build.log 2>&1; echo "built left=$(left)"
timeout $(( $(left) - 10 )) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_splits.py tests/test_merge_slots.py tests/test_ragged_gpu.py tests/test_bench_workloads.py tests/test_paged.py tests/test_append.py tests/test_bad_inputs_append.py > $OUT/tests.log 2>&1; echo "tests rc=$? left=$(left)"; tail -3 $OUT/tests.log

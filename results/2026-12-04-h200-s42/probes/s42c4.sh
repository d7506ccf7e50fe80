#!/usr/bin/env bash
# session 42, call 4 (one H200, the default build: token pairs): the rest of the GPU suite (call 3 ran test_paged,
# test_ragged_gpu and test_fused_merge_gpu), test_bench_gpu.py among it.
left() { echo $((${LIMIT:-570} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__, d.FUSED_MERGE_BUILT)'
MAX_JOBS=15 python -c "$B" > /tmp/o/build.log 2>&1; echo "built left=$(left): $(tail -1 /tmp/o/build.log)"
timeout $(( $(left) - 12 )) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider --ignore tests/test_paged.py --ignore tests/test_ragged_gpu.py --ignore tests/test_fused_merge_gpu.py tests/ > /tmp/o/tests.log 2>&1; echo "tests rc=$? left=$(left)"; grep -E '^(FAILED|ERROR)' /tmp/o/tests.log | head -20; tail -2 /tmp/o/tests.log
gzip -c /tmp/o/tests.log > $OUT/tests.log.gz

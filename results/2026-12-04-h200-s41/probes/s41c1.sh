#!/usr/bin/env bash
# session 41, call 1 (one H200, the default build): the GPU suite but tests/test_bench_gpu.py, after the API's
# bad-input fixes (quantize_kv's own seq_lens, finite checks on valid tokens, the Triton paged split, append_kv's
# long appends and type checks).
left() { echo $((${LIMIT:-570} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__, d.FUSED_MERGE_BUILT)'
MAX_JOBS=15 python -c "$B" > /tmp/o/build.log 2>&1; echo "built left=$(left): $(tail -1 /tmp/o/build.log)"
timeout $(( $(left) - 15 )) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider --ignore tests/test_bench_gpu.py tests/ > /tmp/o/tests.log 2>&1; echo "tests rc=$? left=$(left)"; grep -E '^(FAILED|ERROR)' /tmp/o/tests.log | head -20; tail -2 /tmp/o/tests.log
gzip -c /tmp/o/tests.log > $OUT/tests.log.gz
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1

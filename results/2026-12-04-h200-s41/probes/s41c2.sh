#!/usr/bin/env bash
# session 41, call 2 (the same machine if warm): the harness's GPU tests; the non-gpu-marked tests of the changed
# modules on CUDA tensors (the `device` fixture is CUDA there).
left() { echo $((${LIMIT:-570} - ($(date +%s) - T0))); }
rm -rf /tmp/o2; mkdir -p /tmp/o2
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__, d.FUSED_MERGE_BUILT)'
MAX_JOBS=15 python -c "$B" > /tmp/o2/build.log 2>&1; echo "built left=$(left): $(tail -1 /tmp/o2/build.log)"
timeout $(( $(left) - 200 )) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_bench_gpu.py > /tmp/o2/tests1.log 2>&1; echo "tests1 rc=$? left=$(left)"; grep -E '^(FAILED|ERROR)' /tmp/o2/tests1.log | head; tail -1 /tmp/o2/tests1.log
timeout $(( $(left) - 15 )) python -m pytest -n 4 -q -rfEx -p no:cacheprovider tests/test_bad_inputs.py tests/test_bad_inputs_append.py tests/test_append.py tests/test_paged.py tests/test_reference.py tests/test_quant.py > /tmp/o2/tests2.log 2>&1; echo "tests2 rc=$? left=$(left)"; grep -E '^(FAILED|ERROR)' /tmp/o2/tests2.log | head -20; tail -1 /tmp/o2/tests2.log
gzip -c /tmp/o2/tests1.log > $OUT/tests1.log.gz; gzip -c /tmp/o2/tests2.log > $OUT/tests2.log.gz

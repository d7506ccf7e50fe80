#!/usr/bin/env bash
# session 42, call 5 (one H200, the default build): after the review, the packed-PV GPU test with its new LSE
# tolerance, and the unmarked tests of the modules changed since call 4 on CUDA tensors (the `device` fixture is CUDA
# there: sm_scale in the references, plan.run with a non-cache, the seeded append test, the warp model).
left() { echo $((${LIMIT:-570} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__, d.FUSED_MERGE_BUILT)'
MAX_JOBS=15 python -c "$B" > /tmp/o/build.log 2>&1; echo "built left=$(left): $(tail -1 /tmp/o/build.log)"
timeout 150 python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_decode_cuda.py -k packed_integer_pv > /tmp/o/tests1.log 2>&1; echo "tests1 rc=$? left=$(left)"; grep -E '^(FAILED|ERROR)' /tmp/o/tests1.log | head -20; tail -1 /tmp/o/tests1.log
timeout $(( $(left) - 10 )) python -m pytest -n 4 -q -rfEx -p no:cacheprovider tests/test_bad_inputs.py tests/test_append.py tests/test_reference.py tests/test_plan.py tests/test_pk_tokens_mirror.py > /tmp/o/tests.log 2>&1; echo "tests rc=$? left=$(left)"; grep -E '^(FAILED|ERROR)' /tmp/o/tests.log | head -20; tail -1 /tmp/o/tests.log
gzip -c /tmp/o/tests1.log > $OUT/tests1.log.gz; gzip -c /tmp/o/tests.log > $OUT/tests.log.gz

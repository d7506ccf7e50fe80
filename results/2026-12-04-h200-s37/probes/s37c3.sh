#!/usr/bin/env bash
# session 37, call 3 (one H200), on the commit that lands the fused merge as the default: the default build of every
# head_dim; latency_floor twice (the empty decode at 5 points, each merge); the whole GPU suite.
left() { echo $((${LIMIT:-570} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__, d.FUSED_MERGE_BUILT)'
MAX_JOBS=15 python -c "$B" > /tmp/o/build.log 2>&1; echo "built left=$(left): $(tail -1 /tmp/o/build.log)"
for r in 0 1; do
  timeout 60 python scripts/latency_floor.py /tmp/o/floor$r 1x8192 1x32768 8x8192 8x32768 32x8192 > /tmp/o/floor$r.log 2>&1; echo "floor$r rc=$? left=$(left)"; tail -11 /tmp/o/floor$r.log; cp /tmp/o/floor$r.log $OUT/
done
timeout $(left) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider --durations=5 tests/ > /tmp/o/tests.log 2>&1; echo "tests rc=$? left=$(left)"; grep -E '^(FAILED|ERROR)' /tmp/o/tests.log | head -30; tail -9 /tmp/o/tests.log; gzip -c /tmp/o/tests.log > $OUT/tests.log.gz

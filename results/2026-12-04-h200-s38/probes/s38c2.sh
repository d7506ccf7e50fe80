#!/usr/bin/env bash
# session 38, call 2 (one H200): (1) issue 12: a no-compute stream probe with the decode's grid and copy pattern
# (.ab/stream_probe.py: INT2's six streams against interleaved scales, one stream, INT4; compute stood in for by
# clock64 delays); (2) the whole GPU suite again (call 1 ran out of time at 94%).
left() { echo $((${LIMIT:-570} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__, d.FUSED_MERGE_BUILT)'
(MAX_JOBS=13 python -c "$B" > /tmp/o/build_n.log 2>&1) &
timeout 240 python .ab/stream_probe.py > /tmp/o/stream.log 2>&1; echo "stream rc=$? left=$(left)"; cat /tmp/o/stream.log | tail -60
wait; echo "built left=$(left): $(tail -1 /tmp/o/build_n.log)"
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
timeout $(( $(left) - 15 )) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider --durations=10 tests/ > /tmp/o/tests.log 2>&1; echo "tests rc=$? left=$(left)"; grep -E '^(FAILED|ERROR)' /tmp/o/tests.log | head -30; tail -14 /tmp/o/tests.log
tar -czf $OUT/c2.tgz -C /tmp/o .

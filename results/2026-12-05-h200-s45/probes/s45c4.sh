#!/usr/bin/env bash
# session 45, call 4 (one H200): FOSCAR's contiguous and paged kernels over the whole h200 preset (uniform and ragged
# grids, BF16 operands, read floors) on the session's rule, to compare with session 42's bench row by row (no
# FlashInfer here). Expected: every row within run-to-run spread of session 42's but INT2 64 x 32K contiguous (~0.92-0.95)
# and the ragged lognormal 64-in-32K INT2 contiguous point (~0.96).
: "${T0:=$(date +%s)}"
left() { echo $((${LIMIT:-570} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__)'
MAX_JOBS=16 python -c "$B" > /tmp/o/build.log 2>&1; echo "built left=$(left): $(tail -1 /tmp/o/build.log)"
timeout $(( $(left) - 20 )) foscar bench --arch h200 --operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --read-floor --out /tmp/o/bench --format quiet > /tmp/o/bench.log 2>&1; echo "bench rc=$? left=$(left)"; tail -3 /tmp/o/bench.log
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/c4.tgz -C /tmp/o --exclude='*.so' .

#!/usr/bin/env bash
# session 38, call 3 (one H200): issue 12, where the cache's six tensors lie (.ab/place_probe.py): separate
# allocations (the bench's copies) against one buffer a copy, shifted; call 4: 8 alternating rounds, each timed twice, with clocks.
left() { echo $((${LIMIT:-300} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__, d.FUSED_MERGE_BUILT)'
FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128" MAX_JOBS=15 python -c "$B" > /tmp/o/build.log 2>&1; echo "built left=$(left): $(tail -1 /tmp/o/build.log)"
FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128" timeout $(( $(left) - 10 )) python .ab/place_probe.py > /tmp/o/place.log 2>&1; echo "place rc=$? left=$(left)"; cat /tmp/o/place.log | tail -20
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
cp /tmp/o/place.log $OUT/

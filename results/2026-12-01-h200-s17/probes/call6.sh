#!/usr/bin/env bash
# session 17, call 6 (one H200, the session's last ~250 device seconds): the fused-merge build's GPU tests, not run since
# session 14 (NOTES §50): FOSCAR_MERGE=fused builds the kernel with the in-kernel merge (all instances); its own tests
# and the ragged tests with plans merging in the kernel.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
FOSCAR_MERGE=fused MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__, d.FUSED_MERGE_BUILT)" > /tmp/o/build.log 2>&1; echo "build t=$SECONDS"; tail -1 /tmp/o/build.log
FOSCAR_MERGE=fused timeout $((190 - SECONDS)) python -m pytest -m gpu -n 6 -q -rfEx -p no:cacheprovider tests/test_fused_merge_gpu.py tests/test_ragged_gpu.py > /tmp/o/fused_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -6 /tmp/o/fused_tests.log
cp /tmp/o/fused_tests.log /tmp/o/build.log $OUT/

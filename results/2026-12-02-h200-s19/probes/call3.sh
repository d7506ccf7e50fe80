#!/usr/bin/env bash
# session 19, call 3 (one H200), on this tree (main + redux + the query max tree / FADD rint + batch 1 on the
# fixed path): (1) the default build (all instances); (2) probe_fix1: batch 1, fixed path against the length-aware
# plan of the same slots, 3 rounds alternating, bit-identity; (3) the GPU suite.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
timeout 150 python .ab/probe_fix1.py /tmp/o/fix1.csv 3 > /tmp/o/fix1.log 2>&1; echo "fix1 rc=$? t=$SECONDS"; tail -16 /tmp/o/fix1.log
tar -czf $OUT/c3a.tgz -C /tmp/o .
timeout $((585 - SECONDS)) python -m pytest -m gpu -n 6 -q -rfEx -p no:cacheprovider --ignore=tests/test_fused_merge_gpu.py tests > /tmp/o/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -8 /tmp/o/gpu_tests.log
tar -czf $OUT/c3b.tgz -C /tmp/o gpu_tests.log

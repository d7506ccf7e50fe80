#!/usr/bin/env bash
# session 20, call 5 (one H200): branch fixed-window; the default build; probe_fw (fw1 against fw0 in one process); the GPU suite.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
timeout $((270 - SECONDS)) python .ab/probe_fw.py /tmp/o/fw.csv > /tmp/o/fw.log 2>&1; echo "probe_fw rc=$? t=$SECONDS"; tail -14 /tmp/o/fw.log
tar -czf $OUT/c5.tgz -C /tmp/o .
timeout $((480 - SECONDS)) python -m pytest -m gpu -n 6 -q -rfEx -p no:cacheprovider --ignore=tests/test_fused_merge_gpu.py tests > /tmp/o/suite.log 2>&1; echo "suite rc=$? t=$SECONDS"; tail -8 /tmp/o/suite.log
cp /tmp/o/suite.log $OUT/suite.log

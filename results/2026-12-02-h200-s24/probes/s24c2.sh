#!/usr/bin/env bash
# session 24, call 2 (one H200): INT4 on the packed integer PV against its BF16 PV (probe_pk.py int4), then the whole GPU suite.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
timeout 200 python .ab/probe_pk.py /tmp/o/pk4.csv int4 > /tmp/o/pk4.log 2>&1; echo "pk4 rc=$? t=$SECONDS"; tail -30 /tmp/o/pk4.log | grep -v "^{'bits"
cp /tmp/o/pk4.csv /tmp/o/pk4.log $OUT/ 2>/dev/null
timeout $((585 - SECONDS)) python -m pytest -m gpu -n 6 -q -rfEx -p no:cacheprovider --ignore=tests/test_fused_merge_gpu.py tests > /tmp/o/gpu_suite.log 2>&1; echo "suite rc=$? t=$SECONDS"; tail -12 /tmp/o/gpu_suite.log
cp /tmp/o/gpu_suite.log $OUT/ 2>/dev/null

#!/usr/bin/env bash
# session 27, call 5 (one H200): the GPU suite on main (the kernel of c6efb7a; the paged test at pages 1 and 4 new)
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
timeout $((560 - SECONDS)) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/ --ignore=tests/test_fused_merge_gpu.py > /tmp/o/gpu_suite.log 2>&1; echo "suite rc=$? t=$SECONDS"; tail -8 /tmp/o/gpu_suite.log
cp /tmp/o/gpu_suite.log $OUT/

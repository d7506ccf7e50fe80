#!/usr/bin/env bash
# session 23, call 1 (one H200), on main: the merge kernel's warps / loop block A/B (probe_mw.py), then the whole GPU suite.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
timeout 200 python .ab/probe_mw.py /tmp/o/mw.csv > /tmp/o/mw.log 2>&1; echo "mw rc=$? t=$SECONDS"; tail -22 /tmp/o/mw.log
cp /tmp/o/mw.csv /tmp/o/mw.log $OUT/ 2>/dev/null
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
timeout $((570 - SECONDS)) python -m pytest -m gpu -n 6 -q -rfEx -p no:cacheprovider --ignore=tests/test_fused_merge_gpu.py tests > /tmp/o/t.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -6 /tmp/o/t.log
cp /tmp/o/t.log $OUT/
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1

#!/usr/bin/env bash
# session 23, call 4 (one H200): at batches of 8, chunk ranges from the lengths / the table x one / two rows a merge program (probe_fl2.py).
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
timeout 110 python .ab/probe_fl2.py /tmp/o/fl2.csv > /tmp/o/fl2.log 2>&1; echo "fl2 rc=$? t=$SECONDS"; tail -14 /tmp/o/fl2.log
cp /tmp/o/fl2.csv /tmp/o/fl2.log $OUT/ 2>/dev/null

#!/usr/bin/env bash
# session 19, call 5 (one H200), on main 76b1317: the default build; probe_b1s: batch-1 split counts on the fixed path.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
timeout $((330 - SECONDS)) python .ab/probe_b1s.py /tmp/o/b1s.csv > /tmp/o/b1s.log 2>&1; echo "b1s rc=$? t=$SECONDS"; tail -14 /tmp/o/b1s.log
tar -czf $OUT/c5.tgz -C /tmp/o .

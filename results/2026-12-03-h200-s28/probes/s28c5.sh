#!/usr/bin/env bash
# session 28, call 5 (one H200): python -m bench.timeline (the in-tree profiling build) at three points.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm --format=csv > $OUT/gpu.csv 2>&1
export FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128" MAX_JOBS=16
timeout 170 python -m bench.timeline --point 1x16 --point 1x8192 --point 8x32768 --save $OUT/tl > $OUT/timeline.log 2>&1; echo "rc=$? t=$SECONDS"
tail -20 $OUT/timeline.log

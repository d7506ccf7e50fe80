#!/usr/bin/env bash
# session 22, call 3 (one H200): the merge's small round (probe_mb: old against new in one process), then the merge
# and ragged GPU tests on this tree.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
timeout 300 python .ab/probe_mb.py /tmp/o/mb.csv > /tmp/o/mb.log 2>&1; echo "mb rc=$? t=$SECONDS"; tail -16 /tmp/o/mb.log
cp /tmp/o/mb.csv /tmp/o/mb.log $OUT/ 2>/dev/null
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
timeout $((585 - SECONDS)) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_merge_slots.py tests/test_ragged_gpu.py tests/test_hbm.py > /tmp/o/t.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -4 /tmp/o/t.log
cp /tmp/o/t.log $OUT/

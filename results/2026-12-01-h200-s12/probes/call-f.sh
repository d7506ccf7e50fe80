#!/usr/bin/env bash
# session 12, call F (one H200): the kernel GPU tests on the final main (the kernel sources as cab7dcc's).
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
timeout $((290 - SECONDS)) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_decode_cuda.py tests/test_ragged_gpu.py tests/test_merge_slots.py tests/test_paged.py tests/test_channel_k.py tests/test_bad_inputs.py > /tmp/o/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -4 /tmp/o/gpu_tests.log
tar -czf $OUT/f.tgz -C /tmp/o gpu_tests.log build.log

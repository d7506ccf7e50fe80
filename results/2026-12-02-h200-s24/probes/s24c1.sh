#!/usr/bin/env bash
# session 24, call 1 (one H200): the packed integer PV A/B and the merge rows at batches 16/32 (probe_pk.py), then the
# kernel's GPU tests (decode, paged, ragged, bad inputs).
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
timeout 300 python .ab/probe_pk.py /tmp/o/pk.csv > /tmp/o/pk.log 2>&1; echo "pk rc=$? t=$SECONDS"; tail -40 /tmp/o/pk.log | grep -v "^{'bits"
cp /tmp/o/pk.csv /tmp/o/pk.log $OUT/ 2>/dev/null
timeout $((570 - SECONDS)) python -m pytest -m gpu -n 6 -q -rfEx -p no:cacheprovider tests/test_decode_cuda.py tests/test_paged.py tests/test_ragged_gpu.py tests/test_bad_inputs.py > /tmp/o/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -15 /tmp/o/gpu_tests.log
cp /tmp/o/gpu_tests.log $OUT/ 2>/dev/null

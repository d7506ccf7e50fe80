#!/usr/bin/env bash
# session 35, call 4 (one H200): the poisoned-rows GPU tests (contiguous and paged) after their refactor, on a
# head_dim-128 build of HEAD (the kernel is fef24dd's).
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm --format=csv > $OUT/gpu.csv 2>&1
export FOSCAR_NVCC_DEFINES=FOSCAR_ONLY_HEAD_DIM=128
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > /tmp/build.log 2>&1; echo "built t=$SECONDS $(tail -1 /tmp/build.log)"
timeout $((200 - SECONDS)) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_ragged_gpu.py -k "rows_past" > $OUT/tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -4 $OUT/tests.log

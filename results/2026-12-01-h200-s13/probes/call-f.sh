#!/usr/bin/env bash
# session 13, call F (one H200): the merge's default d_slices rule (4 programs a row where they fit one per SM,
# NOTES §42) under the GPU tests that run small batches at head_dim 64 and 128, then the batch-1 bench rows.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; echo "build rc=$? t=$SECONDS"
timeout 90 python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_ragged_gpu.py tests/test_merge_slots.py tests/test_paged.py > /tmp/o/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -3 /tmp/o/gpu_tests.log
tar -czf $OUT/f1.tgz -C /tmp/o gpu_tests.log build.log
timeout 25 foscar bench --arch h200 --operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --bits 2 --bits 4 --batch 1 --context 8192 --context 32768 --grid sweep --format quiet --out /tmp/o/b1-auto > /tmp/o/b1-auto.log 2>&1; echo "bench rc=$? t=$SECONDS"
python -c "import pandas as pd; d=pd.read_csv('/tmp/o/b1-auto/results.csv'); print(d[['kernel','bits','batch','context','median_us','max_rel_err']].to_string())"
tar -czf $OUT/f2.tgz -C /tmp/o b1-auto b1-auto.log

#!/usr/bin/env bash
# session 15, call E (one H200), on main with the review's fix of the integer PV's clamp (NOTES §46): the full
# default build, the kernel's GPU tests, and the INT2 rows at 8 / 64 x 32K (against bench-64f7f56).
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
timeout $((185 - SECONDS)) python -m pytest -m gpu -n 8 -q -rfEx -p no:cacheprovider tests/test_decode_cuda.py tests/test_bad_inputs.py tests/test_ragged_gpu.py -k "not all_head_dims" > /tmp/o/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -3 /tmp/o/gpu_tests.log
tar -czf $OUT/e0.tgz -C /tmp/o gpu_tests.log build.log
[ $SECONDS -lt 190 ] && { timeout $((215 - SECONDS)) foscar bench --arch h200 --operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --bits 2 --batch 8 --batch 64 --context 32768 --grid sweep --format quiet --out /tmp/o/int2 > /tmp/o/int2.log 2>&1; echo "int2 rc=$? t=$SECONDS"; python -c "
import pandas as pd; d = pd.read_csv('/tmp/o/int2/results.csv'); print(d[['kernel','batch','context','median_us','max_rel_err','status']].to_string())"; tar -czf $OUT/e1.tgz -C /tmp/o int2 int2.log; }
echo "t=$SECONDS"

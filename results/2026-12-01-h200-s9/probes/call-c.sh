#!/usr/bin/env bash
# session 9, call 3: the full bench on the final main (integer QK on, INT4 two chunks past a wave), then kernel GPU tests
K="--operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --kernel flashinfer-fa2-tc-fp8 --kernel flashinfer-xqa-fp8"
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > $OUT/build.log 2>&1; tail -1 $OUT/build.log; echo "built t=$SECONDS"
s=$SECONDS; timeout 330 foscar bench --arch h200 $K --out /tmp/one > $OUT/bench.log 2>&1; echo "bench rc=$? wall $((SECONDS-s)) s"
grep -B2 -A9 "geomean\|Geomean" $OUT/bench.log | tail -45
tar -czf $OUT/one.tgz -C /tmp one
nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
timeout $((560 - SECONDS)) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_decode_cuda.py tests/test_paged.py tests/test_ragged_gpu.py tests/test_bad_inputs.py > $OUT/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -4 $OUT/gpu_tests.log
echo "t=$SECONDS"

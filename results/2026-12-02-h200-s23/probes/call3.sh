#!/usr/bin/env bash
# session 23, call 3 (one H200), on main with the merge's chunk ranges derived from the lengths: the A/B against the
# chunk table (probe_fl.py), the bench (s6 kernel subset), then the whole GPU suite.
K="--operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --kernel flashinfer-fa2-tc-fp8 --kernel flashinfer-xqa-fp8"
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
timeout 100 python .ab/probe_fl.py /tmp/o/fl.csv > /tmp/o/fl.log 2>&1; echo "fl rc=$? t=$SECONDS"; tail -18 /tmp/o/fl.log
cp /tmp/o/fl.csv /tmp/o/fl.log $OUT/ 2>/dev/null
t0=$SECONDS; timeout 200 foscar bench --arch h200 $K --out /tmp/o/bench > /tmp/o/bench.log 2>&1; echo "bench rc=$? wall=$((SECONDS - t0)) s t=$SECONDS"
grep -i "HBM ceiling" /tmp/o/bench.log; grep -A8 "uniform grid" /tmp/o/bench.log | head -30
tar -czf $OUT/c3a.tgz -C /tmp/o bench bench.log build.log
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
timeout $((588 - SECONDS)) python -m pytest -m gpu -n 6 -q -rfEx -p no:cacheprovider --ignore=tests/test_fused_merge_gpu.py tests > /tmp/o/t.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -6 /tmp/o/t.log
cp /tmp/o/t.log $OUT/

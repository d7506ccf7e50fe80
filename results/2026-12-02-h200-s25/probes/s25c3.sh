#!/usr/bin/env bash
# session 25, call 3 (one H200, another machine): split counts at 8 x 32K / 8 x 128K / 32 x 8K (probe_sp.py), then a
# second bench on the same code as call 2's (dc5b2ce's kernel).
K="--operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --kernel flashinfer-fa2-tc-fp8 --kernel flashinfer-xqa-fp8"
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
timeout 130 python .ab/probe_sp.py /tmp/o/sp.csv > /tmp/o/sp.log 2>&1; echo "sp rc=$? t=$SECONDS"; tail -8 /tmp/o/sp.log
t0=$SECONDS; timeout $((560 - SECONDS)) foscar bench --arch h200 $K --out /tmp/o/bench > /tmp/o/bench.log 2>&1; echo "bench rc=$? wall=$((SECONDS - t0)) s t=$SECONDS"
grep -i "HBM ceiling" /tmp/o/bench.log
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/c3.tgz -C /tmp/o bench bench.log build.log sp.csv sp.log

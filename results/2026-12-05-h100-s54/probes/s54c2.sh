#!/usr/bin/env bash
# Session 54, call 2: the README's Status command (the whole h200 preset with FlashInfer's five baselines and read
# floors), the first since session 46 on f705ebf; the kernels are the same (sessions 47-53 changed no kernel that the
# plans take), the harness now records the clock during each timed row (sm_clock_during_mhz, session 52).
# Expected (written before): foscar-cuda INT2 uniform geomean against FlashInfer BF16 at its best 4.85-5.05x (s42
# 5.00x, s46 4.94x / 4.91x), INT4 3.18-3.25x; INT2 against FlashInfer FP8 3.8-4.0x; max_rel_err <= 2e-3 (BF16
# operands); INT2 at batch x context >= 256K at 85% of the ceiling at 3-5 of 8 points (8 x 32K ~80%, 32 x 8K and
# 64 x 8K 81-85%); on an H100 (if no H200 is lent) 8 of 8 as in session 48. sm_clock_during_mhz in every graph-timed row,
# NVML's 1980 or its power-capped values (not the ~1.81 GHz of §97's spin probe).
: "${T0:=$(date +%s)}"
left() { echo $((${LIMIT:-580} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
ARCH=h200; nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H100 && ARCH=h100
rm -rf /tmp/o; mkdir -p /tmp/o
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > /tmp/o/build.log 2>&1; echo "built left=$(left): $(tail -1 /tmp/o/build.log)"
timeout $(( $(left) - 30 )) foscar bench --arch $ARCH --operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --kernel flashinfer-fa2-tc-fp8 --kernel flashinfer-xqa-fp8 --read-floor --out /tmp/o/bench --format quiet > /tmp/o/bench.log 2>&1; echo "bench rc=$? left=$(left)"; tail -3 /tmp/o/bench.log
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/c2.tgz -C /tmp/o --exclude='*.so' .

#!/usr/bin/env bash
# session 13, call C (one H200), on the final kernel of main (3db7463's sources: pgsmem + fw128 merged):
# (1) the full bench (the s6 kernel subset, BF16 operands, FlashInfer's five baselines);
# (2) the fixed cost at 16-token sequences, batch 1 / 8 / 64, FOSCAR and FlashInfer (as NOTES §36).
K="--operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --kernel flashinfer-fa2-tc-fp8 --kernel flashinfer-xqa-fp8"
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; echo "full build rc=$? t=$SECONDS" | tee -a /tmp/o/build.log
t0=$SECONDS; timeout 300 foscar bench --arch h200 $K --out /tmp/o/bench > /tmp/o/bench.log 2>&1; echo "bench rc=$? wall=$((SECONDS - t0)) s t=$SECONDS"
grep -A8 "geomean\|Geomean" /tmp/o/bench.log | head -40
nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/c1.tgz -C /tmp/o bench bench.log build.log
t0=$SECONDS; timeout 120 foscar bench --arch h200 --operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --bits 2 --bits 4 --batch 1 --batch 8 --batch 64 --context 16 --grid sweep --out /tmp/o/ctx16 > /tmp/o/ctx16.log 2>&1; echo "ctx16 rc=$? wall=$((SECONDS - t0)) s t=$SECONDS"
tar -czf $OUT/c2.tgz -C /tmp/o ctx16 ctx16.log
echo "t=$SECONDS"

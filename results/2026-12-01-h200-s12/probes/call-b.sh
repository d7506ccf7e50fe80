#!/usr/bin/env bash
# session 12, call B (one H200): (1) A/B of FOSCAR_MIN_BLOCKS=4 (128 registers, 4 CTAs per SM; INT2 D=128 G=128
# 16 B spill, none in the loop) against the default at the large points; (2) the ragged grid with
# FOSCAR_MERGE_SPECULATE=0/1/0 (FOSCAR rows only); (3) the fixed cost of both sides: the bench at a context
# of 16 tokens (FOSCAR and FlashInfer, same timing).
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
export FOSCAR_AB_SECONDS=80
export FOSCAR_AB="base: mb4:FOSCAR_MIN_BLOCKS=4,FOSCAR_ONLY_HEAD_DIM=128 base2:"
OUT=/tmp/o/l timeout 330 bash scripts/gpu_ab.sh --arch h200 --kernel foscar-cuda --kernel foscar-cuda-paged --operand bf16 --bits 2 --bits 4 --batch 8 --batch 64 --context 32768 --context 131072 --grid sweep --format quiet > /tmp/o/ab-mb4.log 2>&1; echo "ab rc=$? t=$SECONDS"
sed -n '/^variant/,$p' /tmp/o/ab-mb4.log | head -40
nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/b1.tgz -C /tmp/o ab-mb4.log l
unset FOSCAR_AB
R="--arch h200 --grid ragged --kernel foscar-cuda --kernel foscar-cuda-paged --operand bf16 --bits 2 --bits 4 --format quiet"
for v in 0 1 0; do
  n=$((n + 1)); FOSCAR_MERGE_SPECULATE=$v timeout 70 foscar bench $R --out /tmp/o/r$n-spec$v > /tmp/o/r$n.log 2>&1; echo "ragged spec=$v rc=$? t=$SECONDS"
done
tar -czf $OUT/b2.tgz -C /tmp/o r1-spec0 r2-spec1 r3-spec0 r1.log r2.log r3.log
F="--arch h200 --grid sweep --operand bf16 --bits 2 --bits 4 --batch 1 --batch 8 --batch 64 --context 16 --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --format quiet"
timeout $((580 - SECONDS)) foscar bench $F --out /tmp/o/floor16 > /tmp/o/floor16.log 2>&1; echo "floor16 rc=$? t=$SECONDS"
python - <<'PY'
import pandas as pd
d = pd.read_csv("/tmp/o/floor16/results.csv")
print(d[["kernel", "bits", "batch", "context", "median_us", "status"]].to_string())
PY
nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/b3.tgz -C /tmp/o floor16 floor16.log
echo "t=$SECONDS"

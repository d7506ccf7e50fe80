#!/usr/bin/env bash
# session 8, call 3: A/B main vs lever1 f09d482, lever2 6b55454, immaport 4c46584 (BF16 operands)
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $OUT/gpu.csv 2>&1
export FOSCAR_AB="main:@.ab/v/main/foscar/kernels/csrc l1:@.ab/v/l1/foscar/kernels/csrc l2:@.ab/v/l2/foscar/kernels/csrc im:@.ab/v/im/foscar/kernels/csrc"
export FOSCAR_AB_SECONDS=100
timeout 520 bash scripts/gpu_ab.sh --arch h200 --kernel foscar-cuda --kernel foscar-cuda-paged --operand bf16 --bits 2 --bits 4 --batch 1 --batch 8 --batch 64 --context 8192 --context 131072 --grid sweep --format quiet > $OUT/ab.log 2>&1; echo "ab rc=$? t=$SECONDS"
sed -n '/^variant/,$p' $OUT/ab.log | head -40
grep -h "registers\|error\|Error" $OUT/ab.log | head

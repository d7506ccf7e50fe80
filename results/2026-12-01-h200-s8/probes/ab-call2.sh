#!/usr/bin/env bash
# session 8, call 2: A/B of the first lever candidates (main, lever1 a2a7055, lever2 e2e6942) + the IMMA prototype
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $OUT/gpu.csv 2>&1
export FOSCAR_AB="main:@.ab/v/main/foscar/kernels/csrc l1:@.ab/v/l1/foscar/kernels/csrc l2:@.ab/v/l2/foscar/kernels/csrc"
export FOSCAR_AB_SECONDS=120
timeout 420 bash scripts/gpu_ab.sh --arch h200 --kernel foscar-cuda --kernel foscar-cuda-paged --operand bf16 --operand fp8 --bits 2 --bits 4 --batch 1 --batch 8 --batch 64 --context 8192 --context 131072 --grid sweep --format quiet > $OUT/ab.log 2>&1; echo "ab rc=$? t=$SECONDS"
tail -60 $OUT/ab.log
cd .ab/proto && timeout $((580 - SECONDS)) python scripts/prototypes/imma_qk.py run > $OUT/imma.log 2>&1; echo "imma rc=$? t=$SECONDS"; tail -30 $OUT/imma.log

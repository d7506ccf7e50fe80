#!/usr/bin/env bash
# session 8, call 4: HEAD (lever 1 + IMMA QK, FOSCAR_IMMA_QK default 1) vs FOSCAR_IMMA_QK=0; then the GPU suite on HEAD
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $OUT/gpu.csv 2>&1
export FOSCAR_AB="imma1: imma0:FOSCAR_IMMA_QK=0"
export FOSCAR_AB_SECONDS=100
timeout 330 bash scripts/gpu_ab.sh --arch h200 --kernel foscar-cuda --kernel foscar-cuda-paged --operand bf16 --bits 2 --bits 4 --batch 1 --batch 8 --batch 64 --context 8192 --context 131072 --grid sweep --format quiet > $OUT/ab.log 2>&1; echo "ab rc=$? t=$SECONDS"
sed -n '/^variant/,$p' $OUT/ab.log | head -30
timeout $((575 - SECONDS)) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests > $OUT/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -6 $OUT/gpu_tests.log

#!/usr/bin/env bash
# session 9, call 1: the kernel GPU tests on HEAD (integer QK on by default, the overflow fix), then
# A/B: HEAD vs FOSCAR_IMMA_QK=0, and lever 3 (FOSCAR_TILE_PAIR=1) with either QK
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
FOSCAR_NVCC_DEFINES=FOSCAR_IMMA_QK=1 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > $OUT/build.log 2>&1; tail -1 $OUT/build.log; echo "built t=$SECONDS"
FOSCAR_NVCC_DEFINES=FOSCAR_IMMA_QK=1 timeout 220 python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_bad_inputs.py tests/test_decode_cuda.py tests/test_paged.py tests/test_channel_k.py tests/test_ragged_gpu.py > $OUT/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -6 $OUT/gpu_tests.log
export FOSCAR_AB="imma:FOSCAR_IMMA_QK=1 qk16: pair:FOSCAR_TILE_PAIR=1,FOSCAR_IMMA_QK=1@.ab/v/pair/foscar/kernels/csrc pairbf:FOSCAR_TILE_PAIR=1,FOSCAR_IMMA_QK=0@.ab/v/pair/foscar/kernels/csrc"
export FOSCAR_AB_SECONDS=70
timeout $((588 - SECONDS)) bash scripts/gpu_ab.sh --arch h200 --kernel foscar-cuda --kernel foscar-cuda-paged --operand bf16 --bits 2 --bits 4 --batch 8 --batch 64 --context 8192 --context 131072 --grid sweep --format quiet > $OUT/ab.log 2>&1; echo "ab rc=$? t=$SECONDS"
sed -n '/^variant/,$p' $OUT/ab.log | head -30
grep -h "rror" $OUT/ab.log | head
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1

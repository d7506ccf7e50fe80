#!/usr/bin/env bash
# session 10, call C: GPU tests of HEAD (find_work one-pass path, INT4 split rule; all-head_dim compile test),
# then A/B of cp.async stages: base (2) vs 3 vs 4, base again last (drift)
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
timeout 200 python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_bad_inputs.py tests/test_decode_cuda.py tests/test_paged.py tests/test_channel_k.py tests/test_ragged_gpu.py > /tmp/o/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -4 /tmp/o/gpu_tests.log
export FOSCAR_AB="base: st3:FOSCAR_STAGES=3,FOSCAR_ONLY_HEAD_DIM=128 st4:FOSCAR_STAGES=4,FOSCAR_ONLY_HEAD_DIM=128 base2:"
export FOSCAR_AB_SECONDS=65
OUT=/tmp/o timeout $((585 - SECONDS)) bash scripts/gpu_ab.sh --arch h200 --kernel foscar-cuda --kernel foscar-cuda-paged --operand bf16 --bits 2 --bits 4 --batch 8 --batch 64 --context 8192 --context 131072 --grid sweep --format quiet > /tmp/o/ab.log 2>&1; echo "ab rc=$? t=$SECONDS"
sed -n '/^variant/,$p' /tmp/o/ab.log | head -30; grep -h "rror" /tmp/o/ab.log | head -5
nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/c.tgz -C /tmp o --exclude='*.ncu-rep'
echo "t=$SECONDS"

#!/usr/bin/env bash
# session 12, call C (one H200), run from the paged12 branch's tree: (1) A/B of the leaner paged loop against
# main's kernel sources (.ab/main_csrc), head_dim 128 builds; the contiguous rows (unchanged SASS) are the drift control; (2) the
# GPU tests of the kernel on the branch's default build (all 184 instances' compile against its snapshot among them).
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
(MAX_JOBS=6 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; echo "full build rc=$? t=$SECONDS" >> /tmp/o/build.log) &
bpid=$!
export FOSCAR_AB_SECONDS=80
export FOSCAR_AB="base:FOSCAR_ONLY_HEAD_DIM=128@.ab/main_csrc new:FOSCAR_ONLY_HEAD_DIM=128"
OUT=/tmp/o/l timeout 260 bash scripts/gpu_ab.sh --arch h200 --kernel foscar-cuda --kernel foscar-cuda-paged --operand bf16 --bits 2 --bits 4 --batch 8 --batch 64 --context 32768 --context 131072 --grid sweep --format quiet > /tmp/o/ab-paged.log 2>&1; echo "ab rc=$? t=$SECONDS"
sed -n '/^variant/,$p' /tmp/o/ab-paged.log | head -40
nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/c1.tgz -C /tmp/o ab-paged.log l
wait $bpid; tail -2 /tmp/o/build.log
timeout $((585 - SECONDS)) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_paged.py tests/test_decode_cuda.py tests/test_ragged_gpu.py tests/test_bad_inputs.py tests/test_channel_k.py > /tmp/o/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -4 /tmp/o/gpu_tests.log
tar -czf $OUT/c2.tgz -C /tmp/o gpu_tests.log build.log
echo "t=$SECONDS"

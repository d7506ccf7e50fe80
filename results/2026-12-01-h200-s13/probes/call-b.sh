#!/usr/bin/env bash
# session 13, call B (one H200), on main + branch fw128 merged (find_work's one pass up to 128 sequences, no room
# slots below two chunks; NOTES §39) + split_sweep --min-tokens (NOTES §40):
# (1) A/B against main's kernel sources (.ab/main_csrc = 5cc28f3's), head_dim 128 builds: batch 8 (control: the
#     <= 32 path) and 64 at contexts 16 (the fixed cost; capacity 16) and 8192, then the ragged grid;
# (2) the split sweep at batch 1 / 8 with one-iteration splits (256 tokens);
# (3) the kernel GPU tests on this build (all 184 instances' compile against the snapshot among them).
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
(MAX_JOBS=6 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; echo "full build rc=$? t=$SECONDS" >> /tmp/o/build.log) &
bpid=$!
export FOSCAR_AB_SECONDS=80
export FOSCAR_AB="base:FOSCAR_ONLY_HEAD_DIM=128@.ab/main_csrc new:FOSCAR_ONLY_HEAD_DIM=128"
OUT=/tmp/o/u timeout 200 bash scripts/gpu_ab.sh --arch h200 --kernel foscar-cuda --kernel foscar-cuda-paged --operand bf16 --bits 2 --bits 4 --batch 1 --batch 8 --batch 64 --context 16 --context 8192 --grid sweep --format quiet > /tmp/o/ab-uniform.log 2>&1; echo "ab uniform rc=$? t=$SECONDS"
sed -n '/^variant/,/^max_rel_err/p' /tmp/o/ab-uniform.log | head -22
OUT=/tmp/o/r timeout 150 bash scripts/gpu_ab.sh --arch h200 --kernel foscar-cuda --kernel foscar-cuda-paged --operand bf16 --bits 2 --bits 4 --grid ragged --format quiet > /tmp/o/ab-ragged.log 2>&1; echo "ab ragged rc=$? t=$SECONDS"
sed -n '/^variant/,/^max_rel_err/p' /tmp/o/ab-ragged.log | head -26
unset FOSCAR_AB
tar -czf $OUT/b1.tgz -C /tmp/o ab-uniform.log ab-ragged.log u r
FOSCAR_ONLY_HEAD_DIM=128 timeout 150 python scripts/split_sweep.py /tmp/o/sweep --min-tokens 256 --batch 1 --batch 8 --context 4096 --context 8192 --context 32768 --splits 2 --splits 4 --splits 8 --splits 16 --splits 24 --splits 32 --splits 48 --splits 64 > /tmp/o/sweep.log 2>&1; echo "sweep rc=$? t=$SECONDS"
grep "best s" /tmp/o/sweep.log
tar -czf $OUT/b2.tgz -C /tmp/o sweep sweep.log
wait $bpid; tail -2 /tmp/o/build.log
timeout $((590 - SECONDS)) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_paged.py tests/test_decode_cuda.py tests/test_ragged_gpu.py tests/test_bad_inputs.py tests/test_channel_k.py tests/test_merge_slots.py > /tmp/o/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -4 /tmp/o/gpu_tests.log
tar -czf $OUT/b3.tgz -C /tmp/o gpu_tests.log build.log
echo "t=$SECONDS"

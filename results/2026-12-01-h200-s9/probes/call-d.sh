#!/usr/bin/env bash
# session 9, call 4 (issue 15, no 2-GPU machine lent: --shard on one GPU): the same bench as call 3 in two shards run
# one after the other on the one GPU, merged, compared with call 3's one-process run (results/.../bench-be72e03)
K="--operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --kernel flashinfer-fa2-tc-fp8 --kernel flashinfer-xqa-fp8"
nvidia-smi --query-gpu=index,name,uuid,clocks.sm,temperature.gpu,power.draw --format=csv > $OUT/gpu.csv 2>&1
python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > $OUT/build.log 2>&1; echo "built t=$SECONDS"
for k in 0 1; do s=$SECONDS; timeout $((440 - SECONDS)) foscar bench --arch h200 $K --shard $k/2 --out /tmp/s$k --format quiet > $OUT/shard$k.log 2>&1; echo "shard $k rc=$? wall $((SECONDS-s)) s"; done
foscar merge /tmp/s0 /tmp/s1 --out /tmp/merged > $OUT/merge.log 2>&1; echo "merge rc=$?"; tail -25 $OUT/merge.log
foscar compare results/2026-12-01-h200-s9/bench-be72e03 /tmp/merged > $OUT/compare.log 2>&1; echo "compare rc=$?"; grep -i -A14 "geomean\|verdict" $OUT/compare.log | tail -30
tar -czf $OUT/shards.tgz -C /tmp s0 s1 merged
echo "t=$SECONDS"

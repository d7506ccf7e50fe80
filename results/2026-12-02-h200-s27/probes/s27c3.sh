#!/usr/bin/env bash
# session 27, call 3 (one H200): the uniform grid (batch 1-64 x 8K-128K, INT2 and INT4) of the paged kernel against
# FlashInfer over the same pages, at page size 16 (with the contiguous kernel), 1 (a token pool) and 64.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
for ps in 16 1 64; do
  K="--operand bf16 --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc"
  [ $ps != 1 ] && K="$K --kernel flashinfer-xqa"; [ $ps = 16 ] && K="$K --kernel foscar-cuda"
  t0=$SECONDS; timeout 160 foscar bench --arch h200 $K --grid sweep --page-size $ps --out /tmp/o/bench-ps$ps > /tmp/o/bench-ps$ps.log 2>&1; echo "ps$ps rc=$? wall=$((SECONDS - t0)) s t=$SECONDS"
  grep -i "HBM ceiling" /tmp/o/bench-ps$ps.log | head -1; grep -A6 -i "geometric" /tmp/o/bench-ps$ps.log | head -12
done
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/c3.tgz -C /tmp/o .

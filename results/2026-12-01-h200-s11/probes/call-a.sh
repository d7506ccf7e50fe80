#!/usr/bin/env bash
# session 11, call A (nvidia-h200-x2). Phase 1, side by side: GPU 0 runs the A/B of FOSCAR_Q_PREFETCH (base, qpf, base
# again) at batch 1 and 8; GPU 1 runs the kernel GPU tests never run (host mirror, all-head_dim compile) and then ncu
# (full set) of one large INT2 point. Phase 2: the full bench on one GPU, then the same bench over both (--devices all).
K="--operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --kernel flashinfer-fa2-tc-fp8 --kernel flashinfer-xqa-fp8"
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=32 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
(
  export CUDA_VISIBLE_DEVICES=1
  timeout 200 python -m pytest -m gpu -n 8 -q -rfEx -p no:cacheprovider tests/test_ragged_gpu.py tests/test_decode_cuda.py > /tmp/o/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS" >> /tmp/o/gpu_tests.log
  NCU="ncu --clock-control none --kernel-name regex:folded_decode --launch-skip 3 --launch-count 1"
  timeout 120 $NCU --set full --import-source no -o /tmp/o/ncu-int2-64x32k python .ab/ncu_probe.py auto 2 64 32768 > /tmp/o/ncu.log 2>&1; echo "ncu rc=$? t=$SECONDS" >> /tmp/o/ncu.log
  ncu -i /tmp/o/ncu-int2-64x32k.ncu-rep --page details --csv > /tmp/o/ncu-int2-64x32k-details.csv 2>/dev/null
  ncu -i /tmp/o/ncu-int2-64x32k.ncu-rep --page raw --csv > /tmp/o/ncu-int2-64x32k-raw.csv 2>/dev/null
  ncu -i /tmp/o/ncu-int2-64x32k.ncu-rep --page source --csv --print-source sass > /tmp/o/ncu-int2-64x32k-sass.csv 2>/dev/null
  rm -f /tmp/o/*.ncu-rep
) &
side=$!
export CUDA_VISIBLE_DEVICES=0
export FOSCAR_AB="base: qpf:FOSCAR_Q_PREFETCH=1,FOSCAR_ONLY_HEAD_DIM=128 base2:"
export FOSCAR_AB_SECONDS=60
OUT=/tmp/o timeout 240 bash scripts/gpu_ab.sh --arch h200 --kernel foscar-cuda --kernel foscar-cuda-paged --operand bf16 --bits 2 --bits 4 --batch 1 --batch 8 --context 8192 --context 32768 --grid sweep --format quiet > /tmp/o/ab.log 2>&1; echo "ab rc=$? t=$SECONDS"
sed -n '/^variant/,$p' /tmp/o/ab.log | head -30; grep -h "rror" /tmp/o/ab.log | head -5
wait $side; tail -3 /tmp/o/gpu_tests.log; tail -1 /tmp/o/ncu.log
unset CUDA_VISIBLE_DEVICES FOSCAR_AB
tar -czf $OUT/a1.tgz -C /tmp o; rm -rf /tmp/o/ab
nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
t0=$SECONDS; timeout 200 foscar bench --arch h200 $K --out /tmp/o/bench-1gpu > /tmp/o/bench-1gpu.log 2>&1; echo "bench 1 GPU rc=$? wall=$((SECONDS - t0)) s"
grep -A8 "geomean\|Geomean" /tmp/o/bench-1gpu.log | head -30
tar -czf $OUT/a2.tgz -C /tmp/o bench-1gpu bench-1gpu.log
t0=$SECONDS; timeout $((590 - SECONDS)) foscar bench --arch h200 $K --devices all --out /tmp/o/bench-2gpu > /tmp/o/bench-2gpu.log 2>&1; echo "bench 2 GPUs rc=$? wall=$((SECONDS - t0)) s"
grep -A8 "geomean\|Geomean" /tmp/o/bench-2gpu.log | head -30
nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/a3.tgz -C /tmp/o bench-2gpu bench-2gpu.log
echo "t=$SECONDS"

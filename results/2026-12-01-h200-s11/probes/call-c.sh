#!/usr/bin/env bash
# session 11, call C (one H200): latency_floor on main (the merge's table in one load against the speculative
# merge, the empty decode); then the A/B of the f16 PV operands (pvf16 branch, FOSCAR_PV_F16=1) and of the kernel
# body in phase functions (phases3 branch) against main, base again last, at the large points.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
timeout 100 python scripts/latency_floor.py /tmp/o/floor > /tmp/o/floor.log 2>&1; echo "floor rc=$? t=$SECONDS"; tail -24 /tmp/o/floor.log
tar -czf $OUT/c1.tgz -C /tmp o
export FOSCAR_AB_SECONDS=75
export FOSCAR_AB="base: f16:FOSCAR_PV_F16=1,FOSCAR_ONLY_HEAD_DIM=128@.ab/pvf16_csrc phases:FOSCAR_ONLY_HEAD_DIM=128@.ab/phases3_csrc base2:"
OUT=/tmp/o/l timeout $((575 - SECONDS)) bash scripts/gpu_ab.sh --arch h200 --kernel foscar-cuda --kernel foscar-cuda-paged --operand bf16 --bits 2 --bits 4 --batch 8 --batch 64 --context 32768 --context 131072 --grid sweep --format quiet > /tmp/o/ab-large.log 2>&1; echo "ab rc=$? t=$SECONDS"
sed -n '/^variant/,$p' /tmp/o/ab-large.log | head -60
nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/c2.tgz -C /tmp/o ab-large.log l
echo "t=$SECONDS"

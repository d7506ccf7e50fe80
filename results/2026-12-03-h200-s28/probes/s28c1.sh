#!/usr/bin/env bash
# session 28, call 1 (one H200): per-CTA timeline (tl build, .ab/tl_csrc) and main's build, INT2 contiguous.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
export FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128"
(MAX_JOBS=8 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build-n.log 2>&1) &
(FOSCAR_CSRC=$PWD/.ab/tl_csrc MAX_JOBS=8 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build-tl.log 2>&1) &
wait; tail -1 /tmp/o/build-n.log; tail -3 /tmp/o/build-tl.log; echo "built t=$SECONDS"
timeout 200 env FOSCAR_CSRC=$PWD/.ab/tl_csrc python .ab/probe_tl.py /tmp/o/tl tl > /tmp/o/tl.log 2>&1; echo "tl rc=$? t=$SECONDS"; cut -c1-400 /tmp/o/tl.log
timeout 150 python .ab/probe_tl.py /tmp/o/n > /tmp/o/n.log 2>&1; echo "n rc=$? t=$SECONDS"; cut -c1-400 /tmp/o/n.log
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv >> $OUT/gpu.csv 2>&1
tar -czf $OUT/c1.tgz -C /tmp/o .

#!/usr/bin/env bash
# session 31, call 2 (one H200), on HEAD: the timeline with the epilogue's parts (head_dim-128 timeline build), the
# bench (s6 kernel subset), the fixed cost (16-token sequences), the timeline's GPU test.
K="--operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --kernel flashinfer-fa2-tc-fp8 --kernel flashinfer-xqa-fp8"
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
D=FOSCAR_ONLY_HEAD_DIM=128
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__)'
(MAX_JOBS=10 python -c "$B" > /tmp/o/build_full.log 2>&1) &
(FOSCAR_NVCC_DEFINES="$D FOSCAR_TIMELINE=1" MAX_JOBS=6 python -c "$B" > /tmp/o/build_tl.log 2>&1) &
wait; echo "built t=$SECONDS"
for f in /tmp/o/build_*.log; do echo "$f: $(tail -1 $f)"; done
FOSCAR_NVCC_DEFINES="$D FOSCAR_TIMELINE=1" timeout 70 python -m bench.timeline --point 1x16 --point 8x16 --point 64x16 --point 1x8192 --point 8x32768 --point 32x8192 > /tmp/o/tl.log 2>&1; echo "tl rc=$? t=$SECONDS"
grep -v "^ *[1-7] " /tmp/o/tl.log | cut -c1-160
cp /tmp/o/tl.log $OUT/
t0=$SECONDS; timeout 210 foscar bench --arch h200 $K --out /tmp/o/bench > /tmp/o/bench.log 2>&1; echo "bench rc=$? wall=$((SECONDS - t0)) s t=$SECONDS"
grep -i "HBM ceiling" /tmp/o/bench.log; grep -A8 -i "geometric" /tmp/o/bench.log | head -24
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
t0=$SECONDS; timeout 45 foscar bench --arch h200 --operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --bits 2 --bits 4 --batch 1 --batch 8 --batch 64 --context 16 --grid sweep --format quiet --out /tmp/o/ctx16 > /tmp/o/ctx16.log 2>&1; echo "ctx16 rc=$? wall=$((SECONDS - t0)) s t=$SECONDS"
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/c2.tgz -C /tmp/o bench bench.log ctx16 ctx16.log tl.log build_full.log build_tl.log
timeout $((590 - SECONDS)) python -m pytest -m gpu -q -rfEx -p no:cacheprovider tests/test_timeline.py > /tmp/o/tl_test.log 2>&1; echo "tl test rc=$? t=$SECONDS"; tail -4 /tmp/o/tl_test.log
cp /tmp/o/tl_test.log $OUT/

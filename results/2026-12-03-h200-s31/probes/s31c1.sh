#!/usr/bin/env bash
# session 31, call 1 (one H200): the epilogue's reciprocal / lg2 / parked slot ("n", HEAD) against the kernel before
# ("o", .ab/base_csrc = 2475407's csrc), head_dim-128 builds, python -m bench.ab, rounds n o o n; the timeline of "n"
# with the epilogue's parts; then the GPU suite on the default build of HEAD.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
D=FOSCAR_ONLY_HEAD_DIM=128
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__)'
(MAX_JOBS=8 python -c "$B" > /tmp/o/build_full.log 2>&1) &
(FOSCAR_NVCC_DEFINES="$D" MAX_JOBS=3 python -c "$B" > /tmp/o/build_n.log 2>&1) &
(FOSCAR_NVCC_DEFINES="$D" FOSCAR_CSRC=$PWD/.ab/base_csrc MAX_JOBS=3 python -c "$B" > /tmp/o/build_o.log 2>&1) &
(FOSCAR_NVCC_DEFINES="$D FOSCAR_TIMELINE=1" MAX_JOBS=2 python -c "$B" > /tmp/o/build_tl.log 2>&1) &
wait; echo "built t=$SECONDS"
for f in /tmp/o/build_*.log; do echo "$f: $(tail -1 $f)"; done
P="--point 2x1x16 --point 2x8x16 --point 2x64x16 --point 4x1x16 --point 2x8x16:paged --point 2x1x8192 --point 2x1x32768 --point 2x8x8192 --point 2x8x32768 --point 2x32x8192 --point 2x64x8192 --point 2x8x32768:lognormal --point 4x8x32768"
for m in n o o n; do
  if [ -e /tmp/o/ab-$m-0.csv ]; then r=1; else r=0; fi
  export FOSCAR_NVCC_DEFINES="$D"; unset FOSCAR_CSRC; [ $m = o ] && export FOSCAR_CSRC=$PWD/.ab/base_csrc
  timeout 110 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1; echo "probe $m $r rc=$? t=$SECONDS"
done
unset FOSCAR_CSRC
python -m bench.ab table /tmp/o/ab-o-*.csv /tmp/o/ab-n-*.csv | tee /tmp/o/ab-table.txt
FOSCAR_NVCC_DEFINES="$D FOSCAR_TIMELINE=1" timeout 60 python -m bench.timeline --point 1x16 --point 8x16 --point 1x8192 --point 8x32768 > /tmp/o/tl-n.log 2>&1; echo "tl rc=$? t=$SECONDS"
cat /tmp/o/tl-n.log | grep -v "^ *[1-7] " 
unset FOSCAR_NVCC_DEFINES
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
cp /tmp/o/ab-table.txt /tmp/o/tl-n.log $OUT/
tar -czf $OUT/c1a.tgz -C /tmp/o .
timeout $((585 - SECONDS)) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/ --ignore=tests/test_fused_merge_gpu.py > /tmp/o/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -6 /tmp/o/gpu_tests.log
cp /tmp/o/gpu_tests.log $OUT/

#!/usr/bin/env bash
# session 33, call 1 (one H200): (1) launch() only raises the max-dynamic-shared-memory attribute (GPU test, on HEAD and
# on the tree before, .ab/base = 9db8a6a); (2) FOSCAR_EARLY_COPY: "o" HEAD built with FOSCAR_EARLY_COPY=0, "e" HEAD
# (early copy on), head_dim-128 builds, python -m bench.ab rounds o e e o; the timeline of "e"; the new GPU tests;
# then the GPU suite on HEAD's default build.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
D=FOSCAR_ONLY_HEAD_DIM=128
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__)'
(MAX_JOBS=8 python -c "$B" > /tmp/o/build_full.log 2>&1) &
(FOSCAR_NVCC_DEFINES="$D" MAX_JOBS=3 python -c "$B" > /tmp/o/build_e.log 2>&1) &
(FOSCAR_NVCC_DEFINES="$D FOSCAR_EARLY_COPY=0" MAX_JOBS=3 python -c "$B" > /tmp/o/build_o.log 2>&1) &
(cd .ab/base && FOSCAR_NVCC_DEFINES="$D" MAX_JOBS=2 python -c "$B" > /tmp/o/build_base.log 2>&1) &
(FOSCAR_NVCC_DEFINES="$D FOSCAR_TIMELINE=1" MAX_JOBS=2 python -c "$B" > /tmp/o/build_tl.log 2>&1) &
wait; echo "built t=$SECONDS"
for f in /tmp/o/build_*.log; do echo "$f: $(tail -1 $f)"; done
T="tests/test_plan.py::test_gpu_graph_of_a_padded_launch_replays_after_an_unpadded_one"
(cd .ab/base && FOSCAR_NVCC_DEFINES="$D" timeout 60 python -m pytest -q -rfEx -p no:cacheprovider "$T" > /tmp/o/graph_base.log 2>&1; echo "graph test on base rc=$?"; tail -15 /tmp/o/graph_base.log)
P="--point 2x1x16 --point 2x8x16 --point 2x64x16 --point 4x1x16 --point 4x8x16 --point 4x64x16 --point 2x8x16:paged --point 2x1x8192 --point 4x1x8192 --point 2x1x32768 --point 2x8x8192 --point 2x8x32768 --point 2x64x8192 --point 4x64x8192 --point 2x64x32768 --point 2x8x32768:lognormal --point 2x8x131072:one-long"
for m in o e e o; do
  r=0; while [ -e /tmp/o/ab-$m-$r.csv ]; do r=$((r + 1)); done
  if [ $m = o ]; then export FOSCAR_NVCC_DEFINES="$D FOSCAR_EARLY_COPY=0"; else export FOSCAR_NVCC_DEFINES="$D"; fi
  timeout 100 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1; echo "probe $m $r rc=$? t=$SECONDS"
done
unset FOSCAR_NVCC_DEFINES
python -m bench.ab table /tmp/o/ab-o-*.csv /tmp/o/ab-e-*.csv | tee /tmp/o/ab-table.txt
FOSCAR_NVCC_DEFINES="$D FOSCAR_TIMELINE=1" timeout 60 python -m bench.timeline --point 1x16 --point 8x16 --point 64x16 > /tmp/o/tl-e.log 2>&1; echo "tl rc=$? t=$SECONDS"
grep -v "^ *[1-7] " /tmp/o/tl-e.log | tail -40
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
cp /tmp/o/ab-table.txt /tmp/o/tl-e.log /tmp/o/graph_base.log $OUT/
timeout 120 python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_ragged_gpu.py tests/test_plan.py > /tmp/o/new_tests.log 2>&1; echo "new tests rc=$? t=$SECONDS"; tail -8 /tmp/o/new_tests.log
cp /tmp/o/new_tests.log $OUT/
tar -czf $OUT/c1.tgz -C /tmp/o .
timeout $((585 - SECONDS)) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/ --ignore=tests/test_fused_merge_gpu.py --ignore=tests/test_ragged_gpu.py --ignore=tests/test_plan.py > /tmp/o/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -6 /tmp/o/gpu_tests.log
cp /tmp/o/gpu_tests.log $OUT/

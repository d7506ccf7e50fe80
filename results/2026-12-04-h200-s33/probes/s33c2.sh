#!/usr/bin/env bash
# session 33, call 2 (one H200), on HEAD (the early copy reverted; launch() raises the shared-memory attribute only):
# (1) the graph test on the tree before the fix (.ab/base = 9db8a6a, -m gpu), (2) "b" base against "n" HEAD, head_dim-128
# builds, python -m bench.ab rounds b n n b over points whose plans are padded (k = 1, 2) and not, mixed in one process
# (an unpadded launch after a padded one now runs with the raised attribute); (3) the GPU suite on HEAD's default build.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
D=FOSCAR_ONLY_HEAD_DIM=128
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__)'
(MAX_JOBS=10 python -c "$B" > /tmp/o/build_full.log 2>&1) &
(FOSCAR_NVCC_DEFINES="$D" MAX_JOBS=3 python -c "$B" > /tmp/o/build_n.log 2>&1) &
(cd .ab/base && FOSCAR_NVCC_DEFINES="$D" MAX_JOBS=3 python -c "$B" > /tmp/o/build_base.log 2>&1) &
wait; echo "built t=$SECONDS"
for f in /tmp/o/build_*.log; do echo "$f: $(tail -1 $f)"; done
T="tests/test_plan.py::test_gpu_graph_of_a_padded_launch_replays_after_an_unpadded_one"
(cd .ab/base && FOSCAR_NVCC_DEFINES="$D" timeout 60 python -m pytest -m gpu -q -rfEx -p no:cacheprovider "$T" > /tmp/o/graph_base.log 2>&1; echo "graph test on base rc=$?"; grep -E "passed|failed|Error|error" /tmp/o/graph_base.log | tail -8)
P="--point 2x1x16 --point 2x8x32768 --point 2x64x8192 --point 2x1x8192 --point 2x64x32768 --point 4x64x8192 --point 2x32x8192 --point 2x8x8192 --point 2x8x131072:one-long --point 2x64x16"
export FOSCAR_NVCC_DEFINES="$D"
for m in b n n b; do
  r=0; while [ -e /tmp/o/ab-$m-$r.csv ]; do r=$((r + 1)); done
  if [ $m = b ]; then (cd .ab/base && timeout 100 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1)
  else timeout 100 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1; fi
  echo "probe $m $r rc=$? t=$SECONDS"
done
unset FOSCAR_NVCC_DEFINES
python -m bench.ab table /tmp/o/ab-b-*.csv /tmp/o/ab-n-*.csv | tee /tmp/o/ab-table.txt
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
cp /tmp/o/ab-table.txt /tmp/o/graph_base.log $OUT/
tar -czf $OUT/c2.tgz -C /tmp/o .
timeout $((585 - SECONDS)) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/ --ignore=tests/test_fused_merge_gpu.py > /tmp/o/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -6 /tmp/o/gpu_tests.log
cp /tmp/o/gpu_tests.log $OUT/

#!/usr/bin/env bash
# session 35, call 2 (one H200): "o" the tree before (.ab/base = 328b7a4, head_dim-128 build), "n" HEAD (full build,
# the two-dimensional grid for token-wise K); python -m bench.ab rounds o n n o n o on 16-token and large points;
# then the GPU suite on HEAD's full build.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__)'
(MAX_JOBS=12 python -c "$B" > /tmp/o/build_n.log 2>&1) &
(cd .ab/base && FOSCAR_NVCC_DEFINES=FOSCAR_ONLY_HEAD_DIM=128 MAX_JOBS=4 python -c "$B" > /tmp/o/build_o.log 2>&1) &
wait; echo "built t=$SECONDS"
for f in /tmp/o/build_*.log; do echo "$f: $(tail -1 $f)"; done
P="--point 2x1x16 --point 4x1x16 --point 2x8x16:paged --point 2x8x32768 --point 2x8x32768:paged --point 2x32x8192 --point 2x64x8192 --point 2x8x32768:lognormal"
for m in o n n o n o; do
  r=0; while [ -e /tmp/o/ab-$m-$r.csv ]; do r=$((r + 1)); done
  if [ $m = o ]; then (cd .ab/base && FOSCAR_NVCC_DEFINES=FOSCAR_ONLY_HEAD_DIM=128 timeout 60 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1)
  else timeout 60 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1; fi
  echo "probe $m $r rc=$? t=$SECONDS"
done
python -m bench.ab table /tmp/o/ab-o-*.csv /tmp/o/ab-n-*.csv | tee /tmp/o/ab-table.txt; cp /tmp/o/ab-table.txt $OUT/
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
timeout $((585 - SECONDS)) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/ --ignore=tests/test_fused_merge_gpu.py > /tmp/o/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -8 /tmp/o/gpu_tests.log; cp /tmp/o/gpu_tests.log $OUT/
tar -czf $OUT/c2.tgz -C /tmp/o .

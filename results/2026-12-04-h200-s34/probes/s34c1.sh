#!/usr/bin/env bash
# session 34, call 1 (one H200): "o" the tree before (.ab/base = ab78c2e), "f" HEAD built with FOSCAR_SKIP_DEAD_TILES=0
# (find_work's one-chunk path and the query's power-of-two reciprocal only), "n" HEAD (also the dead-tile skip);
# head_dim-128 builds, python -m bench.ab rounds o f n n f o; the timeline of "n"; then the ragged GPU tests on "n"
# (head_dim 128 only; the head_dim-64 case deselected).
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
D=FOSCAR_ONLY_HEAD_DIM=128
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__)'
(FOSCAR_NVCC_DEFINES="$D" MAX_JOBS=4 python -c "$B" > /tmp/o/build_n.log 2>&1) &
(FOSCAR_NVCC_DEFINES="$D FOSCAR_SKIP_DEAD_TILES=0" MAX_JOBS=4 python -c "$B" > /tmp/o/build_f.log 2>&1) &
(cd .ab/base && FOSCAR_NVCC_DEFINES="$D" MAX_JOBS=4 python -c "$B" > /tmp/o/build_base.log 2>&1) &
(FOSCAR_NVCC_DEFINES="$D FOSCAR_TIMELINE=1" MAX_JOBS=4 python -c "$B" > /tmp/o/build_tl.log 2>&1) &
wait; echo "built t=$SECONDS"
for f in /tmp/o/build_*.log; do echo "$f: $(tail -1 $f)"; done
P="--point 2x1x16 --point 2x8x16 --point 2x64x16 --point 4x1x16 --point 4x8x16 --point 2x8x16:paged --point 2x1x8192 --point 2x8x8192 --point 2x8x32768 --point 2x64x8192 --point 4x64x8192 --point 2x64x32768 --point 2x8x32768:lognormal --point 2x64x8192:lognormal:paged"
export FOSCAR_NVCC_DEFINES="$D"
for m in o f n n f o; do
  r=0; while [ -e /tmp/o/ab-$m-$r.csv ]; do r=$((r + 1)); done
  if [ $m = o ]; then (cd .ab/base && timeout 90 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1)
  elif [ $m = f ]; then FOSCAR_NVCC_DEFINES="$D FOSCAR_SKIP_DEAD_TILES=0" timeout 90 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1
  else timeout 90 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1; fi
  echo "probe $m $r rc=$? t=$SECONDS"
done
python -m bench.ab table /tmp/o/ab-o-*.csv /tmp/o/ab-f-*.csv /tmp/o/ab-n-*.csv | tee /tmp/o/ab-table.txt; cp /tmp/o/ab-table.txt $OUT/
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
FOSCAR_NVCC_DEFINES="$D FOSCAR_TIMELINE=1" timeout 50 python -m bench.timeline --point 1x16 --point 8x16 --point 64x16 --point 2x8x32768:lognormal > /tmp/o/tl-n.log 2>&1; echo "tl rc=$? t=$SECONDS"
grep -v "^ *[2-7] " /tmp/o/tl-n.log | tail -24; cp /tmp/o/tl-n.log $OUT/
tar -czf $OUT/c1.tgz -C /tmp/o .
timeout $((580 - SECONDS)) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_ragged_gpu.py -k "not many_sequences" > /tmp/o/tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -8 /tmp/o/tests.log; cp /tmp/o/tests.log $OUT/

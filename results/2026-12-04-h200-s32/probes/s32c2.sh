#!/usr/bin/env bash
# session 32, call 2 (one H200): the decode kernel launched with PDL at run time (FOSCAR_PDL, default 1) and grids of
# at most two CTAs an SM spread evenly (splits.max_ctas_per_sm_choice). "o" the tree before (.ab/base, 6248bf7:
# no PDL, the old rule), "n" HEAD with FOSCAR_PDL=0 (the new rule alone), "p" HEAD (PDL on). head_dim-128 builds,
# python -m bench.ab, rounds o n p p n o; the timeline of "p"; then the GPU suite on HEAD's default build.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
D=FOSCAR_ONLY_HEAD_DIM=128
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__)'
(MAX_JOBS=8 python -c "$B" > /tmp/o/build_full.log 2>&1) &
(FOSCAR_NVCC_DEFINES="$D" MAX_JOBS=3 python -c "$B" > /tmp/o/build_n.log 2>&1) &
(cd .ab/base && FOSCAR_NVCC_DEFINES="$D" MAX_JOBS=3 python -c "$B" > /tmp/o/build_o.log 2>&1) &
(FOSCAR_NVCC_DEFINES="$D FOSCAR_TIMELINE=1" MAX_JOBS=2 python -c "$B" > /tmp/o/build_tl.log 2>&1) &
wait; echo "built t=$SECONDS"
for f in /tmp/o/build_*.log; do echo "$f: $(tail -1 $f)"; done
P="--point 2x1x16 --point 2x8x16 --point 2x64x16 --point 4x1x16 --point 2x8x16:paged --point 2x1x8192 --point 2x1x32768 --point 2x8x8192 --point 2x8x32768 --point 2x32x8192 --point 2x64x8192 --point 2x8x32768:lognormal --point 2x8x131072:one-long --point 2x8x32768:paged --point 4x8x32768 --point 4x1x8192 --point 2x32x32768 --point 2x64x32768"
export FOSCAR_NVCC_DEFINES="$D"
for m in o n p p n o; do
  if [ -e /tmp/o/ab-$m-0.csv ]; then r=1; else r=0; fi
  unset FOSCAR_PDL; [ $m = n ] && export FOSCAR_PDL=0
  if [ $m = o ]; then (cd .ab/base && timeout 100 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1)
  else timeout 100 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1; fi
  echo "probe $m $r rc=$? t=$SECONDS"
done
unset FOSCAR_PDL
python -m bench.ab table /tmp/o/ab-o-*.csv /tmp/o/ab-n-*.csv /tmp/o/ab-p-*.csv | tee /tmp/o/ab-table.txt
FOSCAR_NVCC_DEFINES="$D FOSCAR_TIMELINE=1" timeout 60 python -m bench.timeline --point 1x16 --point 8x16 --point 1x8192 --point 8x32768 --point 32x8192 > /tmp/o/tl-p.log 2>&1; echo "tl rc=$? t=$SECONDS"
grep -v "^ *[1-7] " /tmp/o/tl-p.log | tail -40
unset FOSCAR_NVCC_DEFINES
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
cp /tmp/o/ab-table.txt /tmp/o/tl-p.log $OUT/
tar -czf $OUT/c2a.tgz -C /tmp/o .
timeout $((585 - SECONDS)) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/ --ignore=tests/test_fused_merge_gpu.py > /tmp/o/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -6 /tmp/o/gpu_tests.log
cp /tmp/o/gpu_tests.log $OUT/

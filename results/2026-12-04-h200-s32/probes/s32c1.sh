#!/usr/bin/env bash
# session 32, call 1 (one H200): the decode kernel launched with PDL. "n" main (FOSCAR_PDL 0), "p" FOSCAR_PDL=1
# (the decode kernel triggers after its loop, as main's; the merge does not trigger), "q" p's build with
# FOSCAR_MERGE_TRIGGER=1 (the merge triggers after its stores). head_dim-128 builds, python -m bench.ab, rounds
# n p q q p n.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
D=FOSCAR_ONLY_HEAD_DIM=128
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__)'
(FOSCAR_NVCC_DEFINES="$D" MAX_JOBS=6 python -c "$B" > /tmp/o/build_n.log 2>&1) &
(FOSCAR_NVCC_DEFINES="$D FOSCAR_PDL=1" MAX_JOBS=6 python -c "$B" > /tmp/o/build_p.log 2>&1) &
wait; echo "built t=$SECONDS"
for f in /tmp/o/build_*.log; do echo "$f: $(tail -1 $f)"; done
P="--point 2x1x16 --point 2x8x16 --point 2x64x16 --point 4x1x16 --point 2x8x16:paged --point 2x1x8192 --point 2x1x32768 --point 2x8x8192 --point 2x8x32768 --point 2x32x8192 --point 2x64x8192 --point 2x8x32768:lognormal"
for m in n p q q p n; do
  if [ -e /tmp/o/ab-$m-0.csv ]; then r=1; else r=0; fi
  export FOSCAR_NVCC_DEFINES="$D"; unset FOSCAR_MERGE_TRIGGER
  [ $m != n ] && export FOSCAR_NVCC_DEFINES="$D FOSCAR_PDL=1"
  [ $m = q ] && export FOSCAR_MERGE_TRIGGER=1
  timeout 100 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1; echo "probe $m $r rc=$? t=$SECONDS"
done
unset FOSCAR_MERGE_TRIGGER FOSCAR_NVCC_DEFINES
python -m bench.ab table /tmp/o/ab-n-*.csv /tmp/o/ab-p-*.csv /tmp/o/ab-q-*.csv | tee /tmp/o/ab-table.txt
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
cp /tmp/o/ab-table.txt $OUT/
tar -czf $OUT/c1.tgz -C /tmp/o .

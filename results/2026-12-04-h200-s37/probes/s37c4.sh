#!/usr/bin/env bash
# session 37, call 4 (one H200): the fused merge compiled into every build moved 73 of 204 SASS loop counts (INT4 D=128
# G=64 packed-PV 908 -> 960, INT2 D=128 G=32 paged 1333 -> 1363). Time those instances: "z" a build without the fused
# merge (FOSCAR_FUSED_MERGE=0, the merge kernel: session 35's code), "k" the default build with the merge kernel (the
# fused merge compiled in, not run), "f" the default build as it ships (the fused merge). head_dim 128 builds.
left() { echo $((${LIMIT:-380} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__, d.FUSED_MERGE_BUILT)'
(FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_FUSED_MERGE=0" MAX_JOBS=8 python -c "$B" > /tmp/o/build_z.log 2>&1) &
(FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128" MAX_JOBS=8 python -c "$B" > /tmp/o/build_d.log 2>&1) &
wait; echo "built left=$(left): $(tail -1 /tmp/o/build_z.log) $(tail -1 /tmp/o/build_d.log)"
P="--point 4x1x32768:g64 --point 4x8x32768:g64 --point 4x64x32768:g64 --point 2x1x32768:paged:g32 --point 2x8x32768:paged:g32 --point 2x64x32768:paged:g32 --point 2x64x32768"
for m in z f k z f k; do
  [ $(left) -lt 65 ] && { echo "stop: left=$(left)"; break; }
  r=0; while [ -e /tmp/o/ab-$m-$r.csv ]; do r=$((r + 1)); done
  if [ $m = z ]; then D="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_FUSED_MERGE=0"; M=kernel; else D="FOSCAR_ONLY_HEAD_DIM=128"; M=$([ $m = f ] && echo fused || echo kernel); fi
  FOSCAR_NVCC_DEFINES="$D" FOSCAR_MERGE=$M timeout 60 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1
  echo "probe $m $r rc=$? left=$(left)"
done
python -m bench.ab table /tmp/o/ab-z-*.csv /tmp/o/ab-k-*.csv /tmp/o/ab-f-*.csv --base z | tee /tmp/o/ab-table.txt; cp /tmp/o/ab-table.txt $OUT/
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/c4.tgz -C /tmp/o .

#!/usr/bin/env bash
# session 40, call 2 (one H200): the cp.async copies' L2 prefetch-size hint (FOSCAR_CP_L2_PREFETCH). "n": this tree's
# head_dim-128 build (no hint, the default); "a": .L2::128B; "b": .L2::256B. Rounds n a b b a n.
left() { echo $((${LIMIT:-570} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
declare -A D=([n]="FOSCAR_ONLY_HEAD_DIM=128" [a]="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_CP_L2_PREFETCH=128" [b]="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_CP_L2_PREFETCH=256")
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__)'
for m in n a b; do (FOSCAR_NVCC_DEFINES="${D[$m]}" MAX_JOBS=5 python -c "$B" > /tmp/o/build_$m.log 2>&1) & done
wait; echo "built left=$(left): $(tail -1 /tmp/o/build_n.log) | $(tail -1 /tmp/o/build_a.log) | $(tail -1 /tmp/o/build_b.log)"
P="--point 2x8x32768 --point 2x32x8192 --point 2x64x8192 --point 2x8x131072 --point 2x32x32768 --point 2x64x32768 --point 2x8x32768:paged --point 2x64x32768:paged --point 4x8x32768 --point 4x64x32768 --point 2x1x32768"
for m in n a b b a n; do
  [ $(left) -lt 70 ] && { echo "stop: left=$(left)"; break; }
  r=0; while [ -e /tmp/o/ab-$m-$r.csv ]; do r=$((r + 1)); done
  t0=$SECONDS; FOSCAR_NVCC_DEFINES="${D[$m]}" timeout 100 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1
  echo "probe $m $r rc=$? wall=$((SECONDS - t0)) left=$(left)"
  nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> /tmp/o/smi.txt 2>&1
done
python -m bench.ab table /tmp/o/ab-n-*.csv /tmp/o/ab-a-*.csv /tmp/o/ab-b-*.csv --base n | tee /tmp/o/ab-table.txt; cp /tmp/o/ab-table.txt $OUT/
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/c2.tgz -C /tmp/o .

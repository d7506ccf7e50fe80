#!/usr/bin/env bash
# session 43, call 2 (one H200): cp.async stages on the token-pairs kernel (b2d47b7). "t": FOSCAR_STAGES=2 (default),
# "s": 3, "f": 4; all head_dim-128 builds. Rounds t s f f s t.
left() { echo $((${LIMIT:-570} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
declare -A D=([t]="FOSCAR_ONLY_HEAD_DIM=128" [s]="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_STAGES=3" [f]="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_STAGES=4")
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__)'
for m in t s f; do (FOSCAR_NVCC_DEFINES="${D[$m]}" MAX_JOBS=5 python -c "$B" > /tmp/o/build_$m.log 2>&1) & done
wait; echo "built left=$(left): $(tail -qn1 /tmp/o/build_*.log | tr '\n' ' ')"
P="--point 2x8x32768 --point 2x32x8192 --point 2x64x8192 --point 2x8x131072 --point 2x32x32768 --point 2x64x32768 --point 2x64x131072 --point 2x8x32768:paged --point 2x1x32768 --point 2x1x8192 --point 2x8x32768:g32 --point 4x8x32768 --point 4x64x8192 --point 2x1x16"
for m in t s f f s t; do
  [ $(left) -lt 60 ] && { echo "stop: left=$(left)"; break; }
  r=0; while [ -e /tmp/o/ab-$m-$r.csv ]; do r=$((r + 1)); done
  t0=$SECONDS; FOSCAR_NVCC_DEFINES="${D[$m]}" timeout 110 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1
  echo "probe $m $r rc=$? wall=$((SECONDS - t0)) left=$(left)"; tail -1 /tmp/o/ab-$m-$r.log
  nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> /tmp/o/smi.txt 2>&1
done
python -m bench.ab table /tmp/o/ab-t-*.csv /tmp/o/ab-s-*.csv /tmp/o/ab-f-*.csv --base t | tee /tmp/o/ab-table.txt; cp /tmp/o/ab-table.txt $OUT/
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/c2.tgz -C /tmp/o --exclude='*.so' .

#!/usr/bin/env bash
# session 49, last call (an H100, the device time nearly spent): three cp.async stages (FOSCAR_STAGES=3, "s") against
# two ("t"), head_dim-128 builds, rounds t s s t. Why: on the H100 the stream probe (NOTES §93) read a one-wave grid's
# 160 MiB at the decode's own rate with the decode's depth (two sub-tiles in flight at the wait: the probe's 3 stages,
# 62.5-62.8 us against the decode's 61.8) and ~4% faster one deeper (60.1 us), where on the H200 (§87) three stages
# were level. Expected (written before): INT2 8 x 32K and 32 x 8K -3..-4%, 64 x 8K -2..-3%, 8 x 128K -1..-2%, INT4 8 x
# 32K -1..-3%; if all are within +-1%, the decode is not depth-bound on the H100 either.
: "${T0:=$(date +%s)}"
left() { echo $((${LIMIT:-250} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
declare -A D=([t]="FOSCAR_ONLY_HEAD_DIM=128" [s]="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_STAGES=3")
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__)'
for m in t s; do (FOSCAR_NVCC_DEFINES="${D[$m]}" MAX_JOBS=8 python -c "$B" > /tmp/o/build_$m.log 2>&1) & done
wait; echo "built left=$(left): $(tail -1 /tmp/o/build_t.log) | $(tail -1 /tmp/o/build_s.log)"
P="--point 2x8x32768 --point 2x32x8192 --point 2x64x8192 --point 2x8x131072 --point 4x8x32768"
for m in t s s t; do
  [ $(left) -lt 25 ] && { echo "stop: left=$(left)"; break; }
  r=0; while [ -e /tmp/o/ab-$m-$r.csv ]; do r=$((r + 1)); done
  t0=$SECONDS; FOSCAR_NVCC_DEFINES="${D[$m]}" timeout $(( $(left) - 10 )) python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1
  echo "probe $m $r rc=$? wall=$((SECONDS - t0)) left=$(left)"
done
python -m bench.ab table /tmp/o/ab-t-*.csv /tmp/o/ab-s-*.csv --base t 2>&1 | tee /tmp/o/ab-table.txt; cp /tmp/o/ab-table.txt $OUT/
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/c5.tgz -C /tmp/o --exclude='*.so' .

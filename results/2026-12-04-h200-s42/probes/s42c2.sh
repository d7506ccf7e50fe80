#!/usr/bin/env bash
# session 42, call 2 (one H200): two sub-tiles a step in the token-pair instances (FOSCAR_PAIR_STEPS=1, FOSCAR_STAGES=4),
# "p", against this tree's default build "t" (token pairs, one sub-tile a step), both at head_dim 128; the packed-PV GPU
# tests on p's build of all head dims first. Rounds t p p t t p.
left() { echo $((${LIMIT:-570} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
declare -A D=([t]="FOSCAR_ONLY_HEAD_DIM=128" [p]="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_STAGES=4 FOSCAR_PAIR_STEPS=1" [P]="FOSCAR_STAGES=4 FOSCAR_PAIR_STEPS=1")
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__)'
for m in t p P; do (FOSCAR_NVCC_DEFINES="${D[$m]}" MAX_JOBS=5 python -c "$B" > /tmp/o/build_$m.log 2>&1) & done
wait; echo "built left=$(left): $(tail -1 /tmp/o/build_t.log) | $(tail -1 /tmp/o/build_p.log) | $(tail -1 /tmp/o/build_P.log)"
FOSCAR_NVCC_DEFINES="${D[P]}" timeout 150 python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_decode_cuda.py -k "packed or head_dims_and_gqa or ctas_per_sm" > /tmp/o/tests.log 2>&1; echo "tests rc=$? left=$(left)"; grep -E '^(FAILED|ERROR)' /tmp/o/tests.log | head -20; tail -2 /tmp/o/tests.log
P="--point 2x8x32768 --point 2x32x8192 --point 2x64x8192 --point 2x8x131072 --point 2x32x32768 --point 2x64x32768 --point 2x8x32768:paged --point 2x1x32768 --point 2x8x32768:g64 --point 4x8x32768 --point 4x64x8192 --point 2x1x16 --point 2x8x131072:one-long"
for m in t p p t t p; do
  [ $(left) -lt 45 ] && { echo "stop: left=$(left)"; break; }
  r=0; while [ -e /tmp/o/ab-$m-$r.csv ]; do r=$((r + 1)); done
  t0=$SECONDS; FOSCAR_NVCC_DEFINES="${D[$m]}" timeout 100 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1
  echo "probe $m $r rc=$? wall=$((SECONDS - t0)) left=$(left)"
  nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> /tmp/o/smi.txt 2>&1
done
python -m bench.ab table /tmp/o/ab-t-*.csv /tmp/o/ab-p-*.csv --base t | tee /tmp/o/ab-table.txt; cp /tmp/o/ab-table.txt $OUT/
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
gzip -c /tmp/o/tests.log > $OUT/tests.log.gz
tar -czf $OUT/c2.tgz -C /tmp/o --exclude='*.so' .

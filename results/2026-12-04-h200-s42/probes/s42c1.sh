#!/usr/bin/env bash
# session 42, call 1 (one H200): token pairs in the packed QK (FOSCAR_PK_TOKENS). "t": this tree's default build (all
# head dims; the GPU tests of test_decode_cuda.py run on it), "n": FOSCAR_PK_TOKENS=0 at head_dim 128. Rounds t n n t t n.
left() { echo $((${LIMIT:-570} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
declare -A D=([t]="" [n]="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_PK_TOKENS=0")
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__)'
(FOSCAR_NVCC_DEFINES="${D[t]}" MAX_JOBS=11 python -c "$B" > /tmp/o/build_t.log 2>&1) &
(FOSCAR_NVCC_DEFINES="${D[n]}" MAX_JOBS=5 python -c "$B" > /tmp/o/build_n.log 2>&1) &
wait; echo "built left=$(left): $(tail -1 /tmp/o/build_t.log) | $(tail -1 /tmp/o/build_n.log)"
timeout 170 python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_decode_cuda.py > /tmp/o/tests.log 2>&1; echo "tests rc=$? left=$(left)"; grep -E '^(FAILED|ERROR)' /tmp/o/tests.log | head -20; tail -2 /tmp/o/tests.log
P="--point 2x8x32768 --point 2x32x8192 --point 2x64x8192 --point 2x8x131072 --point 2x32x32768 --point 2x64x32768 --point 2x8x32768:paged --point 2x1x32768 --point 2x8x32768:g32 --point 2x8x32768:g64 --point 4x8x32768 --point 4x64x8192 --point 2x1x16"
for m in t n n t t n; do
  [ $(left) -lt 60 ] && { echo "stop: left=$(left)"; break; }
  r=0; while [ -e /tmp/o/ab-$m-$r.csv ]; do r=$((r + 1)); done
  t0=$SECONDS; FOSCAR_NVCC_DEFINES="${D[$m]}" timeout 100 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1
  echo "probe $m $r rc=$? wall=$((SECONDS - t0)) left=$(left)"
  nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> /tmp/o/smi.txt 2>&1
done
python -m bench.ab table /tmp/o/ab-t-*.csv /tmp/o/ab-n-*.csv --base n | tee /tmp/o/ab-table.txt; cp /tmp/o/ab-table.txt $OUT/
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
gzip -c /tmp/o/tests.log > $OUT/tests.log.gz
tar -czf $OUT/c1.tgz -C /tmp/o --exclude='*.so' .

#!/usr/bin/env bash
# session 35, call 1 (one H200): "o" the tree before (.ab/base = 328b7a4), "n" HEAD (FOSCAR_GRID_2D: the decode grid
# num_kv_heads x num_slots, no division by num_kv_heads after griddepcontrol.wait); head_dim-128 builds, python -m
# bench.ab rounds o n n o; then sustained INT2 / INT4 decodes at 64 x 128K and 32 x 32K with an nvidia-smi trace
# (SM clock, power, throttle reasons every 20 ms); then the grid's GPU tests on "n".
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
D=FOSCAR_ONLY_HEAD_DIM=128
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__)'
export FOSCAR_NVCC_DEFINES="$D"
(MAX_JOBS=8 python -c "$B" > /tmp/o/build_n.log 2>&1) &
(cd .ab/base && MAX_JOBS=8 python -c "$B" > /tmp/o/build_o.log 2>&1) &
wait; echo "built t=$SECONDS"
for f in /tmp/o/build_*.log; do echo "$f: $(tail -1 $f)"; done
P="--point 2x1x16 --point 2x8x16 --point 2x64x16 --point 4x1x16 --point 4x8x16 --point 2x8x16:paged --point 2x1x8192 --point 2x8x8192 --point 2x8x32768 --point 2x32x8192 --point 2x8x32768:lognormal --point 4x8x32768"
for m in o n n o; do
  r=0; while [ -e /tmp/o/ab-$m-$r.csv ]; do r=$((r + 1)); done
  if [ $m = o ]; then (cd .ab/base && timeout 80 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1)
  else timeout 80 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1; fi
  echo "probe $m $r rc=$? t=$SECONDS"
done
python -m bench.ab table /tmp/o/ab-o-*.csv /tmp/o/ab-n-*.csv | tee /tmp/o/ab-table.txt; cp /tmp/o/ab-table.txt $OUT/
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active,clocks_event_reasons.sw_power_cap,clocks_event_reasons.hw_slowdown --format=csv,noheader -lms 20 > /tmp/o/smi.csv 2>&1 &
SMI=$!
date +%s.%N > /tmp/o/smi_t0.txt
timeout 150 python .ab/power.py /tmp/o/power.csv 10 2x64x131072 4x64x131072 2x32x32768 4x32x32768 > /tmp/o/power.log 2>&1; echo "power rc=$? t=$SECONDS"
kill $SMI; tail -3 /tmp/o/power.log
cp /tmp/o/power.csv /tmp/o/smi.csv $OUT/ 2>/dev/null
tar -czf $OUT/c1.tgz -C /tmp/o .
timeout $((570 - SECONDS)) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_decode_cuda.py tests/test_ragged_gpu.py -k "not head_dim_64 and not 64-" > /tmp/o/tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -8 /tmp/o/tests.log; cp /tmp/o/tests.log $OUT/

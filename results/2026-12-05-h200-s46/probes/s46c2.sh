#!/usr/bin/env bash
# session 46, call 2 (one H200): (1) the whole GPU suite on main (first full run with FlashInfer installed since
# session 42); (2) what the room costs a uniform batch: plan_work's spare slots (num_slots = 2 x batch where one chunk a
# sequence fills the GPU, for a ragged batch's long sequences) are 512 CTAs that find no work at 64 x 8K, and every
# working CTA scans the batch's lengths. "n" (.ab/ab_noroom.py) keeps such plans to one slot a sequence (the fixed
# path, as 32 x 8K has); "a" is plan_work's. Rounds a n n a.
# Expected (written before): n / a at uniform INT2 64 x 8K 0.97-1.00, INT4 64 x 8K 0.97-1.00, INT2 64 x 16K and 64 x 32K
# 0.98-1.01; 32 x 8K (the same plan under both) 0.99-1.01; lognormal 64 in 32K n / a >= 1.5 (the room is why that point
# runs at ~80 us, not ~150). Outputs bit-identical at the uniform points (one chunk a sequence either way).
# Rule: if INT2 64 x 8K is <= 0.98 in both rounds, the room costs a uniform batch >= 2% (next: cheaper empty CTAs);
# else the room is free there and that lead is closed.
: "${T0:=$(date +%s)}"
left() { echo $((${LIMIT:-570} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > /tmp/o/build.log 2>&1; echo "built left=$(left): $(tail -1 /tmp/o/build.log)"
timeout 200 python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests > /tmp/o/tests.log 2>&1; echo "tests rc=$? left=$(left)"; grep -E '^(FAILED|ERROR)' /tmp/o/tests.log | head -20; tail -2 /tmp/o/tests.log
P="--point 2x64x8192 --point 4x64x8192 --point 2x64x16384 --point 2x64x32768 --point 2x64x32768:lognormal --point 2x32x8192"
for m in a n n a; do
  [ $(left) -lt 50 ] && { echo "stop: left=$(left)"; break; }
  r=0; while [ -e /tmp/o/ab-$m-$r.csv ]; do r=$((r + 1)); done
  if [ $m = n ]; then C="python .ab/ab_noroom.py"; else C="python -m bench.ab"; fi
  t0=$SECONDS; timeout $(( $(left) - 15 )) $C run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1
  echo "probe $m $r rc=$? wall=$((SECONDS - t0)) left=$(left)"
  nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> /tmp/o/smi.txt 2>&1
done
python -m bench.ab table /tmp/o/ab-a-*.csv /tmp/o/ab-n-*.csv --base a | tee /tmp/o/ab-table.txt; cp /tmp/o/ab-table.txt $OUT/
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
gzip -c /tmp/o/tests.log > $OUT/tests.log.gz
tar -czf $OUT/c2.tgz -C /tmp/o --exclude='*.so' --exclude='tests.log' .

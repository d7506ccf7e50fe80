#!/usr/bin/env bash
# session 45, call 3 (one H200): the narrowed rule (INT2 only: INT4 keeps its chunks and CTAs an SM) "n" against the
# rule before "o" (.ab/ab_old_rule.py), rounds o n n o; then FOSCAR's contiguous kernel over the h200 [sweep] grid with
# read floors (no FlashInfer here: the ceiling fractions, not the speed-ups). Prediction: s45c3.note.
: "${T0:=$(date +%s)}"
left() { echo $((${LIMIT:-570} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__)'
MAX_JOBS=16 python -c "$B" > /tmp/o/build.log 2>&1; echo "built left=$(left): $(tail -1 /tmp/o/build.log)"
P="--point 2x64x32768 --point 2x64x16384 --point 2x64x32768:lognormal --point 4x64x32768 --point 4x64x32768:lognormal --point 2x64x32768:paged"
for m in o n n o; do
  [ $(left) -lt 200 ] && { echo "stop: left=$(left)"; break; }
  r=0; while [ -e /tmp/o/ab-$m-$r.csv ]; do r=$((r + 1)); done
  t0=$SECONDS
  if [ $m = o ]; then timeout 120 python .ab/ab_old_rule.py run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1
  else timeout 120 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1; fi
  echo "rule $m $r rc=$? wall=$((SECONDS - t0)) left=$(left)"
done
python -m bench.ab table /tmp/o/ab-o-*.csv /tmp/o/ab-n-*.csv --base o | tee /tmp/o/ab-table.txt
cp /tmp/o/ab-table.txt $OUT/ 2>/dev/null
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
[ $(left) -gt 150 ] && { timeout $(( $(left) - 20 )) foscar bench --arch h200 --operand bf16 --kernel foscar-cuda --grid sweep --read-floor --out /tmp/o/bench --format quiet > /tmp/o/bench.log 2>&1; echo "bench rc=$? left=$(left)"; tail -3 /tmp/o/bench.log; }
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
python - <<'PY' 2>&1 | tee /tmp/o/ceiling.txt
import pandas as pd
d = pd.read_csv('/tmp/o/bench/results.csv')
d = d[(d.kernel == 'foscar-cuda') & (d.batch * d.context >= 262144)]
cols = [c for c in ('bits', 'batch', 'context', 'median_us', 'sol_fraction', 'floor_fraction', 'status', 'clock_note') if c in d.columns]
print(d[cols].to_string(index=False))
PY
tar -czf $OUT/c3.tgz -C /tmp/o --exclude='*.so' .

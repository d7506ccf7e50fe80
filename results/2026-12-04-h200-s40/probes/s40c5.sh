#!/usr/bin/env bash
# session 40, call 5 (the same warm H200 as calls 3-4, default build cached): does --read-floor move the rows it
# follows? foscar bench's uniform grid, FOSCAR contiguous + fa2-tc + XQA, without and then with --read-floor.
left() { echo $((${LIMIT:-570} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,clocks.sm,temperature.gpu,power.draw --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
G="--arch h200 --operand bf16 --kernel foscar-cuda --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --grid sweep --format quiet"
for f in no-read-floor read-floor; do
  t0=$SECONDS; timeout $(( $(left) - 20 )) foscar bench $G --$f --out /tmp/o/bench-$f > /tmp/o/bench-$f.log 2>&1; echo "bench $f rc=$? wall=$((SECONDS - t0)) s left=$(left)"
done
python - <<'PY' | tee /tmp/o/table.txt
import pandas as pd
fr = []
for f in ('no-read-floor', 'read-floor'):
    d = pd.read_csv(f'/tmp/o/bench-{f}/results.csv'); d['run'] = f; fr.append(d)
d = pd.concat(fr); d = d[d.status == 'ok']; d = d[d.kernel == 'foscar-cuda']
t = d.pivot_table(index=['cache_bits', 'batch', 'context'], columns='run', values=['median_us', 'sol_fraction', 'sm_clock_after_mhz'])
t['ratio'] = t[('median_us', 'read-floor')] / t[('median_us', 'no-read-floor')]
print(t.round(3).to_string())
PY
cp /tmp/o/table.txt $OUT/; tar -czf $OUT/c5.tgz -C /tmp/o bench-no-read-floor bench-read-floor
nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1

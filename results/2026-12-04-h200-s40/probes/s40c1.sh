#!/usr/bin/env bash
# session 40, call 1 (one H200): the size-matched read floor (scripts/read_floor.py: the fastest read-only Triton
# kernel of each >= 256K point's bytes, timed as the bench times) while the default build compiles; then foscar bench
# (FOSCAR contiguous and paged, INT2 and INT4, batch 8-64 x 8K-128K) on the same GPU.
left() { echo $((${LIMIT:-570} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__, d.FUSED_MERGE_BUILT)'
(MAX_JOBS=12 python -c "$B" > /tmp/o/build.log 2>&1; echo "built at left=$(left)" >> /tmp/o/build.log) &
timeout 240 python scripts/read_floor.py /tmp/o/floor > /tmp/o/floor.log 2>&1; echo "floor rc=$? left=$(left)"; tail -20 /tmp/o/floor.log
wait; tail -2 /tmp/o/build.log
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
G="--arch h200 --operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --bits 2 --bits 4 --batch 8 --batch 32 --batch 64 --context 8192 --context 32768 --context 131072 --grid sweep --format quiet"
t0=$SECONDS; timeout $(( $(left) - 25 )) foscar bench $G --out /tmp/o/bench > /tmp/o/bench.log 2>&1; echo "bench rc=$? wall=$((SECONDS - t0)) s left=$(left)"
python - <<'PY' | tee /tmp/o/table.txt
import pandas as pd
f = pd.read_csv('/tmp/o/floor/read_floor.csv')
best = f.loc[f.groupby('bytes')['median_us'].idxmin()].set_index(['bits', 'batch', 'context'])
d = pd.read_csv('/tmp/o/bench/results.csv'); d = d[d.status == 'ok']
for k, g in d.groupby('kernel'):
    g = g.set_index(['bits', 'batch', 'context'])
    j = g[['median_us', 'sol_fraction']].join(best[['shape', 'median_us', 'sol_fraction']], rsuffix='_read', how='inner')
    j['of_read'] = j['median_us_read'] / j['median_us']
    print(k); print(j.round(3).to_string())
PY
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
cp /tmp/o/table.txt /tmp/o/floor.log $OUT/ 2>/dev/null; tar -czf $OUT/c1.tgz -C /tmp/o floor bench bench.log build.log

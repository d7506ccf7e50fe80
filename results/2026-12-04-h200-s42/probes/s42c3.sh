#!/usr/bin/env bash
# session 42, call 3 (one H200, the default build: token pairs): foscar bench with --read-floor (session 37's kernel
# subset), then as much of the GPU suite (but tests/test_bench_gpu.py) as the call has left.
left() { echo $((${LIMIT:-570} - ($(date +%s) - T0))); }
K="--operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --kernel flashinfer-fa2-tc-fp8 --kernel flashinfer-xqa-fp8"
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__, d.FUSED_MERGE_BUILT)'
MAX_JOBS=15 python -c "$B" > /tmp/o/build.log 2>&1; echo "built left=$(left): $(tail -1 /tmp/o/build.log)"
t0=$SECONDS; timeout $(( $(left) - 60 )) foscar bench --arch h200 $K --read-floor --out /tmp/o/bench > /tmp/o/bench.log 2>&1; echo "bench rc=$? wall=$((SECONDS - t0)) s left=$(left)"
grep -i "HBM ceiling" /tmp/o/bench.log; grep -A8 -i "geometric" /tmp/o/bench.log | head -24
python - <<'PY' | tee /tmp/o/floor-table.txt
import pandas as pd
d = pd.read_csv('/tmp/o/bench/results.csv'); d = d[d.status.isin(['ok', 'suspect'])]
d['tok'] = d.batch * d.context
for k, g in d[(d.grid == 'sweep') & (d.tok >= 262144)].groupby('kernel'):
    print(k); print(g.pivot_table(index=['batch', 'context'], columns='cache_bits', values=['sol_fraction', 'floor_fraction']).round(3).to_string())
PY
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
cp /tmp/o/floor-table.txt $OUT/ 2>/dev/null; tar -czf $OUT/c3.tgz -C /tmp/o bench bench.log build.log
[ $(left) -gt 40 ] && { timeout $(( $(left) - 12 )) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider --ignore tests/test_bench_gpu.py tests/test_paged.py tests/test_ragged_gpu.py tests/test_fused_merge_gpu.py > /tmp/o/tests.log 2>&1; echo "tests rc=$? left=$(left)"; grep -E '^(FAILED|ERROR)' /tmp/o/tests.log | head -20; tail -2 /tmp/o/tests.log; gzip -c /tmp/o/tests.log > $OUT/tests.log.gz; }

#!/usr/bin/env bash
# session 39, call 3 (one H200, the default build): the GPU tests of the fused merge that changed after session 38's
# suite; then foscar bench's uniform sweep grid (batch 1-64 x 8K-128K, INT2 and INT4) with --sustain-s 0 and then 2
# (its second form, not yet run on a GPU), FOSCAR's contiguous kernel beside FlashInfer's fa2-tc and XQA.
left() { echo $((${LIMIT:-570} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__, d.FUSED_MERGE_BUILT)'
MAX_JOBS=15 python -c "$B" > /tmp/o/build.log 2>&1; echo "built left=$(left): $(tail -1 /tmp/o/build.log)"
timeout 120 python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_fused_merge_gpu.py > /tmp/o/tests.log 2>&1; echo "tests rc=$? left=$(left)"; tail -4 /tmp/o/tests.log
G="--arch h200 --operand bf16 --kernel foscar-cuda --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --bits 2 --bits 4 --grid sweep --format quiet"
for S in 0 2; do
  [ $(left) -lt 60 ] && { echo "stop: left=$(left)"; break; }
  t0=$SECONDS; timeout $(( $(left) - 20 )) foscar bench $G --sustain-s $S --out /tmp/o/bench-s$S > /tmp/o/bench-s$S.log 2>&1; echo "bench s=$S rc=$? wall=$((SECONDS - t0)) s left=$(left)"
done
python - <<'PY' | tee /tmp/o/sustain-table.txt
import pandas as pd
fr = []
for s in (0, 2):
    try:
        d = pd.read_csv(f'/tmp/o/bench-s{s}/results.csv'); d['sustain'] = s; fr.append(d)
    except Exception as e:
        print(s, e)
d = pd.concat(fr)
d = d[d.status == 'ok']
d['row'] = d.kernel + '/' + d.bits.fillna(0).astype(int).astype(str)
t = d.pivot_table(index=['row', 'batch', 'context'], columns='sustain', values=['median_us', 'sm_clock_before_mhz', 'sm_clock_after_mhz'])
t['ratio'] = t[('median_us', 2)] / t[('median_us', 0)]
print(t.round(3).to_string())
f = d[~d.is_baseline].pivot_table(index=['bits', 'batch', 'context'], columns='sustain', values=['speedup_vs_flashinfer_bf16', 'sol_fraction'])
print(f.round(3).to_string())
PY
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
cp /tmp/o/sustain-table.txt $OUT/; gzip -c /tmp/o/tests.log > $OUT/tests.log.gz; tar -czf $OUT/c3.tgz -C /tmp/o bench-s0 bench-s2 bench-s0.log bench-s2.log build.log

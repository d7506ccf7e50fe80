#!/usr/bin/env bash
# session 38, call 5 (one H200): foscar bench --sustain-s 0 against --sustain-s 2 on one GPU, INT2 and INT4 at batch
# 8 and 64 x 32K and 128K, FOSCAR's contiguous kernel against FlashInfer's fa2-tc and XQA (the default build).
left() { echo $((${LIMIT:-560} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__, d.FUSED_MERGE_BUILT)'
MAX_JOBS=15 python -c "$B" > /tmp/o/build.log 2>&1; echo "built left=$(left): $(tail -1 /tmp/o/build.log)"
G="--arch h200 --operand bf16 --kernel foscar-cuda --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --bits 2 --bits 4 --batch 8 --batch 64 --context 32768 --context 131072 --grid sweep --format quiet"
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
t = d.pivot_table(index=['row', 'batch', 'context'], columns='sustain', values=['median_us', 'sm_clock_after_mhz'])
t['ratio'] = t[('median_us', 2)] / t[('median_us', 0)]
print(t.round(3).to_string())
f = d[~d.is_baseline].pivot_table(index=['bits', 'batch', 'context'], columns='sustain', values=['speedup_vs_flashinfer_bf16', 'sol_fraction'])
print(f.round(3).to_string())
PY
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
cp /tmp/o/sustain-table.txt $OUT/; tar -czf $OUT/c5.tgz -C /tmp/o bench-s0 bench-s2 bench-s0.log bench-s2.log build.log

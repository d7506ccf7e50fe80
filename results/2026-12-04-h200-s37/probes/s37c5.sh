#!/usr/bin/env bash
# session 37, call 5 (one H200): batch 1, INT2, at fixed split counts 4-32 and the default plan, with the in-kernel
# merge and with the merge kernel (scripts/split_sweep.py through plan_decode's run; head_dim-128 build): would fused
# plans at batch 1 do better with fewer chunks a sequence (NOTES §79, §80)?
left() { echo $((${LIMIT:-230} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
export FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128"
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__, d.FUSED_MERGE_BUILT)'
MAX_JOBS=15 python -c "$B" > /tmp/o/build.log 2>&1; echo "built left=$(left): $(tail -1 /tmp/o/build.log)"
for M in fused kernel fused; do
  [ $(left) -lt 40 ] && { echo "stop: left=$(left)"; break; }
  r=0; while [ -e /tmp/o/$M-$r ]; do r=$((r + 1)); done
  FOSCAR_MERGE=$M timeout $(( $(left) - 5 )) python scripts/split_sweep.py /tmp/o/$M-$r --bits 2 --batch 1 --context 8192 --context 32768 --context 131072 --splits 4 --splits 8 --splits 16 --splits 32 > /tmp/o/$M-$r.log 2>&1
  echo "sweep $M $r rc=$? left=$(left)"
done
python - <<'PY' | tee $OUT/sweep-table.txt
import glob, pandas as pd
frames = []
for f in sorted(glob.glob('/tmp/o/*-*/split_sweep.csv')):
    d = pd.read_csv(f); d['run'] = f.split('/')[3]; frames.append(d)
d = pd.concat(frames)
print(d.pivot_table(index=['context', 'num_splits'], columns='run', values='median_us').round(2).to_string())
print('max err', d.max_rel_err.max(), 'status', d.status.value_counts().to_dict())
PY
tar -czf $OUT/c5.tgz -C /tmp/o .

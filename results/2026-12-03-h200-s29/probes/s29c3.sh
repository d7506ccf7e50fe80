#!/usr/bin/env bash
# session 29, call 3 (one H200), on the final rule: the A/B of FOSCAR_MAX_CTAS_PER_SM auto against 0 at a few points
# (a 0 0 a), then the whole GPU suite (but the fused-merge build's file).
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
for m in auto 0 0 auto; do
  if [ -e /tmp/o/ab-$m-0.csv ]; then r=1; else r=0; fi
  timeout 80 python .ab/probe_cps.py $m $r /tmp/o/ab-$m-$r.csv > /tmp/o/ab-$m-$r.log 2>&1; echo "probe $m $r rc=$? t=$SECONDS"
done
python - <<'PY' | tee /tmp/o/ab-table.txt
import glob, pandas as pd
d = pd.concat([pd.read_csv(f, dtype={"m": str}) for f in glob.glob("/tmp/o/ab-*.csv")])
ix = ["bits", "batch", "context", "workload", "paged", "ns"]
p = d.pivot_table(index=ix, columns=["m", "rnd"], values="median_us", aggfunc="mean")
q = d.pivot_table(index=ix, columns="m", values="median_us", aggfunc="mean")
p[("a/0", "")] = q["auto"] / q["0"]
p[("k", "")] = d[d.m == "auto"].groupby(ix).k.max()
p[("ctas", "")] = d.groupby(ix).ctas.max()
pd.set_option("display.width", 250)
print(p.round(3).to_string())
s = d.groupby(ix).sha.nunique()
print("points whose outputs differ between settings/rounds:", int((s > 1).sum()), "of", len(s))
print(d.groupby("m").err.max().to_dict(), "nan", d.nan.any())
PY
timeout $((590 - SECONDS)) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/ --ignore=tests/test_fused_merge_gpu.py > /tmp/o/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -6 /tmp/o/gpu_tests.log
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
cp /tmp/o/ab-table.txt /tmp/o/gpu_tests.log $OUT/
tar -czf $OUT/c3.tgz -C /tmp/o .

#!/usr/bin/env bash
# session 29, call 2 (one H200): CTAs an SM, "auto" (at most 2 where the grid is larger than 2 an SM) against "0" (as
# many as fit, the launch before), one process per setting and round (a 0 0 a); then the bench on the working tree
# (the rule on), the fixed cost, and the kernel's GPU tests.
K="--operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --kernel flashinfer-fa2-tc-fp8 --kernel flashinfer-xqa-fp8"
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
for m in auto 0 0 auto; do
  if [ -e /tmp/o/ab-$m-0.csv ]; then r=1; else r=0; fi
  timeout 100 python .ab/probe_cps.py $m $r /tmp/o/ab-$m-$r.csv > /tmp/o/ab-$m-$r.log 2>&1; echo "probe $m $r rc=$? t=$SECONDS"
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
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
t0=$SECONDS; timeout 200 foscar bench --arch h200 $K --out /tmp/o/bench > /tmp/o/bench.log 2>&1; echo "bench rc=$? wall=$((SECONDS - t0)) s t=$SECONDS"
grep -i "HBM ceiling" /tmp/o/bench.log; grep -A8 -i "geometric" /tmp/o/bench.log | head -24
t0=$SECONDS; timeout 40 foscar bench --arch h200 --operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --bits 2 --bits 4 --batch 1 --batch 8 --batch 64 --context 16 --grid sweep --format quiet --out /tmp/o/ctx16 > /tmp/o/ctx16.log 2>&1; echo "ctx16 rc=$? wall=$((SECONDS - t0)) s t=$SECONDS"
timeout $((590 - SECONDS)) python -m pytest -m gpu -n 6 -q -rfEx -p no:cacheprovider tests/test_ragged_gpu.py tests/test_splits.py tests/test_decode_cuda.py -k 'ctas or settings or ragged or int4 or split' > /tmp/o/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -6 /tmp/o/gpu_tests.log
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
cp /tmp/o/ab-table.txt /tmp/o/gpu_tests.log $OUT/
tar -czf $OUT/c2.tgz -C /tmp/o .
ls $OUT

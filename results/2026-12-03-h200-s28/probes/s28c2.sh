#!/usr/bin/env bash
# session 28, call 2 (one H200): the query's loads before the prologue's copies ("n", the working tree) against HEAD~1's
# kernel ("b": FOSCAR_CSRC=.ab/b28_csrc), both head_dim-128 builds, one process per build and round (n b b n); then the
# timeline of "n" (.ab/tln_csrc) at the probe_tl points.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
export FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128"
(MAX_JOBS=6 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build_n.log 2>&1) &
(FOSCAR_CSRC=$PWD/.ab/b28_csrc MAX_JOBS=5 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build_b.log 2>&1) &
(FOSCAR_CSRC=$PWD/.ab/tln_csrc MAX_JOBS=5 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build_tl.log 2>&1) &
wait; echo "built t=$SECONDS"
tail -1 /tmp/o/build_n.log /tmp/o/build_b.log /tmp/o/build_tl.log
for m in n b b n; do
  if [ -e /tmp/o/ab-$m-0.csv ]; then r=1; else r=0; fi
  if [ $m = b ]; then export FOSCAR_CSRC=$PWD/.ab/b28_csrc; else unset FOSCAR_CSRC; fi
  timeout 130 python .ab/probe_ab.py $m $r /tmp/o/ab-$m-$r.csv > /tmp/o/ab-$m-$r.log 2>&1; echo "probe $m $r rc=$? t=$SECONDS"
done
unset FOSCAR_CSRC
python - <<'PY' | tee /tmp/o/ab-table.txt
import glob, pandas as pd
d = pd.concat([pd.read_csv(f) for f in glob.glob("/tmp/o/ab-*.csv")])
p = d.pivot_table(index=["bits", "batch", "context", "workload", "paged"], columns=["m", "rnd"], values="median_us", aggfunc="mean")
q = d.pivot_table(index=["bits", "batch", "context", "workload", "paged"], columns="m", values="median_us", aggfunc="mean")
p["n/b"] = q["n"] / q["b"]
pd.set_option("display.width", 200)
print(p.round(3).to_string())
s = d.groupby(["bits", "batch", "context", "workload", "paged"]).sha.nunique()
print("points whose outputs differ between builds/rounds:", int((s > 1).sum()), "of", len(s))
print(d.groupby("m").err.max().to_dict(), "nan", d.nan.any())
PY
timeout $((585 - SECONDS)) env FOSCAR_CSRC=$PWD/.ab/tln_csrc python .ab/probe_tl.py /tmp/o/tl tl > /tmp/o/tl.log 2>&1; echo "tl rc=$? t=$SECONDS"
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/c2.tgz -C /tmp/o .

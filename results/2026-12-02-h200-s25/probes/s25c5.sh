#!/usr/bin/env bash
# session 25, call 5 (one H200): 3 cp.async stages (FOSCAR_STAGES=3, head_dim-128 build, "t") against the default 2 ("h"),
# one process per build and round (h t t h), probe_qh.py's points. Information for the next session, not a change.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
SD="FOSCAR_STAGES=3 FOSCAR_ONLY_HEAD_DIM=128"
(MAX_JOBS=10 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build_h.log 2>&1; echo "built h t=$SECONDS") &
(FOSCAR_NVCC_DEFINES="$SD" MAX_JOBS=6 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build_t.log 2>&1; echo "built t t=$SECONDS") &
wait
for r in 0 1; do
  if [ $r = 0 ]; then order="h t"; else order="t h"; fi
  for m in $order; do
    if [ $m = t ]; then export FOSCAR_NVCC_DEFINES="$SD"; else unset FOSCAR_NVCC_DEFINES; fi
    timeout 100 python .ab/probe_qh.py $m $r /tmp/o/st-$m-$r.csv > /tmp/o/st-$m-$r.log 2>&1; echo "probe $m $r rc=$? t=$SECONDS"
  done
done
unset FOSCAR_NVCC_DEFINES
python - <<'PY'
import glob, pandas as pd
d = pd.concat([pd.read_csv(f) for f in glob.glob("/tmp/o/st-*.csv")])
p = d.pivot_table(index=["bits", "batch", "context", "workload", "paged"], columns="m", values="median_us", aggfunc="mean")
p["t/h"] = p["t"] / p["h"]
pd.set_option("display.width", 200)
print(p.round(3).to_string())
print(d.groupby("m").err.max().to_dict(), "nan", d.nan.any())
PY
tar -czf $OUT/c5.tgz -C /tmp/o $(cd /tmp/o && ls st-* build_*.log)

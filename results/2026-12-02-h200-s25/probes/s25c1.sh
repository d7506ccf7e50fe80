#!/usr/bin/env bash
# session 25, call 1 (one H200): FOSCAR_QK_HALF=1 (default build, "h") against =0 ("s", head_dim-128 build), one process per
# build and round (order h s, then s h), then the fixed-point-query and packed GPU tests on the default build.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
SD="FOSCAR_QK_HALF=0 FOSCAR_ONLY_HEAD_DIM=128"
(MAX_JOBS=10 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build_h.log 2>&1; echo "built h t=$SECONDS") &
(FOSCAR_NVCC_DEFINES="$SD" MAX_JOBS=6 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build_s.log 2>&1; echo "built s t=$SECONDS") &
wait
tail -1 /tmp/o/build_h.log /tmp/o/build_s.log
for r in 0 1; do
  if [ $r = 0 ]; then order="h s"; else order="s h"; fi
  for m in $order; do
    if [ $m = s ]; then export FOSCAR_NVCC_DEFINES="$SD"; else unset FOSCAR_NVCC_DEFINES; fi
    timeout 150 python .ab/probe_qh.py $m $r /tmp/o/qh-$m-$r.csv > /tmp/o/qh-$m-$r.log 2>&1; echo "probe $m $r rc=$? t=$SECONDS"
  done
done
unset FOSCAR_NVCC_DEFINES
python - <<'PY'
import glob, pandas as pd
d = pd.concat([pd.read_csv(f) for f in glob.glob("/tmp/o/qh-*.csv")])
p = d.pivot_table(index=["bits", "batch", "context", "workload", "paged"], columns="m", values="median_us", aggfunc="mean")
p["h/s"] = p["h"] / p["s"]
pd.set_option("display.width", 200)
print(p.round(3).to_string())
print(d.groupby("m").err.max().to_dict(), "nan", d.nan.any())
PY
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
timeout $((575 - SECONDS)) python -m pytest -m gpu -n 6 -q -rfEx -p no:cacheprovider tests/test_decode_cuda.py tests/test_bad_inputs.py -k "fixed_point or packed or head_dims_and_gqa or magnitude" > /tmp/o/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -8 /tmp/o/gpu_tests.log
tar -czf $OUT/c1.tgz -C /tmp/o .

#!/usr/bin/env bash
# session 26, call 1 (one H200): the lean softmax / rcp change (default build, "n") against HEAD 19e572b's kernel
# ("b": FOSCAR_CSRC=.ab/b26_csrc, head_dim-128 build), one process per build and round (n b, then b n), then the
# fixed-point / packed / magnitude / head-dim GPU tests on the default build.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
(MAX_JOBS=10 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build_n.log 2>&1; echo "built n t=$SECONDS") &
(FOSCAR_CSRC=$PWD/.ab/b26_csrc FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128" MAX_JOBS=6 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build_b.log 2>&1; echo "built b t=$SECONDS") &
wait
tail -1 /tmp/o/build_n.log /tmp/o/build_b.log
for r in 0 1; do
  if [ $r = 0 ]; then order="n b"; else order="b n"; fi
  for m in $order; do
    if [ $m = b ]; then export FOSCAR_CSRC=$PWD/.ab/b26_csrc FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128"; else unset FOSCAR_CSRC FOSCAR_NVCC_DEFINES; fi
    timeout 150 python .ab/probe_ab.py $m $r /tmp/o/ab-$m-$r.csv > /tmp/o/ab-$m-$r.log 2>&1; echo "probe $m $r rc=$? t=$SECONDS"
  done
done
unset FOSCAR_CSRC FOSCAR_NVCC_DEFINES
python - <<'PY' | tee /tmp/o/ab-table.txt
import glob, pandas as pd
d = pd.concat([pd.read_csv(f) for f in glob.glob("/tmp/o/ab-*.csv")])
p = d.pivot_table(index=["bits", "batch", "context", "workload", "paged"], columns="m", values="median_us", aggfunc="mean")
p["n/b"] = p["n"] / p["b"]
pd.set_option("display.width", 200)
print(p.round(3).to_string())
s = d.groupby(["bits", "batch", "context", "workload", "paged"]).sha.nunique()
print("points whose outputs differ between builds/rounds:", int((s > 1).sum()), "of", len(s))
print(d.groupby("m").err.max().to_dict(), "nan", d.nan.any())
PY
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
timeout $((580 - SECONDS)) python -m pytest -m gpu -n 6 -q -rfEx -p no:cacheprovider tests/test_decode_cuda.py tests/test_bad_inputs.py -k "fixed_point or packed or head_dims_and_gqa or magnitude or nan or inf" > /tmp/o/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -8 /tmp/o/gpu_tests.log
tar -czf $OUT/c1.tgz -C /tmp/o .

#!/usr/bin/env bash
# session 27, call 4 (one H200): the small-page copies with the L2 prefetch hint (default build, "n") against main
# f5c65ee's kernel ("b": FOSCAR_CSRC=.ab/b27_csrc, head_dim-128 build), one process per build and round (n b b n);
# then the paged GPU tests on the default build.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
(MAX_JOBS=10 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build_n.log 2>&1; echo "built n t=$SECONDS") &
(FOSCAR_CSRC=$PWD/.ab/b27_csrc FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128" MAX_JOBS=6 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build_b.log 2>&1; echo "built b t=$SECONDS") &
wait
tail -1 /tmp/o/build_n.log /tmp/o/build_b.log
for r in 0 1; do
  if [ $r = 0 ]; then order="n b"; else order="b n"; fi
  for m in $order; do
    if [ $m = b ]; then export FOSCAR_CSRC=$PWD/.ab/b27_csrc FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128"; else unset FOSCAR_CSRC FOSCAR_NVCC_DEFINES; fi
    timeout 100 python .ab/probe_pf.py $m $r /tmp/o/ab-$m-$r.csv > /tmp/o/ab-$m-$r.log 2>&1; echo "probe $m $r rc=$? t=$SECONDS"
  done
done
unset FOSCAR_CSRC FOSCAR_NVCC_DEFINES
python - <<'PY' | tee /tmp/o/ab-table.txt
import glob, pandas as pd
d = pd.concat([pd.read_csv(f) for f in glob.glob("/tmp/o/ab-*.csv")])
k = ["bits", "batch", "context", "page_size", "shuffle"]
p = d.pivot_table(index=k, columns="m", values="median_us", aggfunc="mean")
p["n/b"] = p["n"] / p["b"]
r = d.pivot_table(index=k, columns=["m", "rnd"], values="median_us", aggfunc="first")
pd.set_option("display.width", 200)
print(p.round(3).to_string()); print(r.round(2).to_string())
s = d.groupby(k).sha.nunique()
print("points whose outputs differ between builds/rounds:", int((s > 1).sum()), "of", len(s))
print(d.groupby("m").err.max().to_dict(), "nan", d.nan.any())
PY
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
timeout $((570 - SECONDS)) python -m pytest -m gpu -n 6 -q -rfEx -p no:cacheprovider tests/test_paged.py tests/test_ragged_gpu.py tests/test_decode_cuda.py -k "paged or page" > /tmp/o/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -6 /tmp/o/gpu_tests.log
tar -czf $OUT/c4.tgz -C /tmp/o .

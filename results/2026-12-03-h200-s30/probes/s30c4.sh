#!/usr/bin/env bash
# session 30, call 4 (one H200): FOSCAR_PARAMS_EARLY=1 ("e") against =0 ("z"), head_dim-128 builds, e z z e (NOTES §71)
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
D=FOSCAR_ONLY_HEAD_DIM=128
(FOSCAR_NVCC_DEFINES="$D FOSCAR_PARAMS_EARLY=1" MAX_JOBS=8 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build_e.log 2>&1) &
(FOSCAR_NVCC_DEFINES="$D FOSCAR_PARAMS_EARLY=0" MAX_JOBS=8 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build_z.log 2>&1) &
wait; echo "built t=$SECONDS"; tail -1 /tmp/o/build_e.log /tmp/o/build_z.log
for m in e z z e; do
  if [ -e /tmp/o/ab-$m-0.csv ]; then r=1; else r=0; fi
  if [ $m = e ]; then v=1; else v=0; fi
  FOSCAR_NVCC_DEFINES="$D FOSCAR_PARAMS_EARLY=$v" timeout 80 python .ab/probe_pe.py $m $r /tmp/o/ab-$m-$r.csv > /tmp/o/ab-$m-$r.log 2>&1; echo "probe $m $r rc=$? t=$SECONDS"
done
python - <<'PY' | tee $OUT/ab-table.txt
import glob, pandas as pd
d = pd.concat([pd.read_csv(f, dtype={"m": str}) for f in glob.glob("/tmp/o/ab-*.csv")])
k = ["bits", "batch", "context", "workload", "paged"]
p = d.pivot_table(index=k, columns=["m", "rnd"], values="median_us", aggfunc="mean")
q = d.pivot_table(index=k, columns="m", values="median_us", aggfunc="mean")
p[("e/z", "")] = q["e"] / q["z"]
pd.set_option("display.width", 250)
print(p.round(3).to_string())
s = d.groupby(k).sha.nunique()
print("points whose outputs differ between builds/rounds:", int((s > 1).sum()), "of", len(s))
print(d.groupby("m").err.max().to_dict(), "nan", d.nan.any())
PY
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/c4.tgz -C /tmp/o .

#!/usr/bin/env bash
# session 30, call 1 (one H200): FOSCAR_EARLY_QUERY 1 ("e", the working tree's default: the fixed path loads the integer
# QK's query before find_work) against 0 ("n": after find_work, as before), head_dim-128 builds of one source; one process
# per build and round (e n n e); the timelines of both at 1 x 16, 1 x 8K, 32 x 8K.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
D=FOSCAR_ONLY_HEAD_DIM=128
(FOSCAR_NVCC_DEFINES="$D" MAX_JOBS=6 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build_e.log 2>&1) &
(FOSCAR_NVCC_DEFINES="$D FOSCAR_EARLY_QUERY=0" MAX_JOBS=4 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build_n.log 2>&1) &
(FOSCAR_NVCC_DEFINES="$D FOSCAR_TIMELINE=1" MAX_JOBS=3 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build_te.log 2>&1) &
(FOSCAR_NVCC_DEFINES="$D FOSCAR_EARLY_QUERY=0 FOSCAR_TIMELINE=1" MAX_JOBS=3 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build_tn.log 2>&1) &
wait; echo "built t=$SECONDS"
for f in /tmp/o/build_*.log; do echo "$f: $(tail -1 $f)"; done
for m in e n n e; do
  if [ -e /tmp/o/ab-$m-0.csv ]; then r=1; else r=0; fi
  export FOSCAR_NVCC_DEFINES="$D"; [ $m = n ] && export FOSCAR_NVCC_DEFINES="$D FOSCAR_EARLY_QUERY=0"
  timeout 100 python .ab/probe_eq.py $m $r /tmp/o/ab-$m-$r.csv > /tmp/o/ab-$m-$r.log 2>&1; echo "probe $m $r rc=$? t=$SECONDS"
done
python - <<'PY' | tee /tmp/o/ab-table.txt
import glob, pandas as pd
d = pd.concat([pd.read_csv(f, dtype={"m": str}) for f in glob.glob("/tmp/o/ab-*.csv")])
k = ["bits", "batch", "context", "workload", "paged"]
p = d.pivot_table(index=k, columns=["m", "rnd"], values="median_us", aggfunc="mean")
q = d.pivot_table(index=k, columns="m", values="median_us", aggfunc="mean")
p[("e/n", "")] = q["e"] / q["n"]
pd.set_option("display.width", 250)
print(p.round(3).to_string())
s = d.groupby(k).sha.nunique()
print("points whose outputs differ between builds/rounds:", int((s > 1).sum()), "of", len(s))
print(d.groupby("m").err.max().to_dict(), "nan", d.nan.any())
PY
for m in e n; do
  export FOSCAR_NVCC_DEFINES="$D FOSCAR_TIMELINE=1"; [ $m = n ] && export FOSCAR_NVCC_DEFINES="$D FOSCAR_EARLY_QUERY=0 FOSCAR_TIMELINE=1"
  timeout 60 python -m bench.timeline --point 1x16 --point 1x8192 --point 32x8192 --save /tmp/o/tl-$m > /tmp/o/tl-$m.log 2>&1; echo "tl $m rc=$? t=$SECONDS"
done
unset FOSCAR_NVCC_DEFINES
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
cat /tmp/o/tl-e.log /tmp/o/tl-n.log
cp /tmp/o/ab-table.txt $OUT/
tar -czf $OUT/c1.tgz -C /tmp/o .

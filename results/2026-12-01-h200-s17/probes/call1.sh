#!/usr/bin/env bash
# session 17, call 1 (one H200): (1) two builds in parallel: the new kernel (query-once + wide CTAs), all instances,
# and the base (.ab/base = c4d1d9a's foscar + bench), head_dim 128 only; (2) .ab/probe_w.py base (4 warps), new (4, auto,
# 12 and fewer splits at 12), base, new; base/new at 4 warps must be bit-identical (query-once).
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
ROOT=$PWD
(MAX_JOBS=12 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1) &
(cd .ab/base && PYTHONPATH=. FOSCAR_NVCC_DEFINES=FOSCAR_ONLY_HEAD_DIM=128 MAX_JOBS=4 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__, d.__file__)" > /tmp/o/build0.log 2>&1) &
wait; echo "builds t=$SECONDS"; tail -2 /tmp/o/build.log; tail -2 /tmp/o/build0.log
base() { (cd .ab/base && PYTHONPATH=. FOSCAR_NVCC_DEFINES=FOSCAR_ONLY_HEAD_DIM=128 timeout 90 python $ROOT/.ab/probe_w.py base$1 $OUT/w-base$1.csv 4 small > /tmp/o/w-base$1.log 2>&1); echo "base$1 rc=$? t=$SECONDS"; }
new() { timeout $2 python .ab/probe_w.py new$1 $OUT/w-new$1.csv 4,auto,12 $3 > /tmp/o/w-new$1.log 2>&1; echo "new$1 rc=$? t=$SECONDS"; }
base 1; new 1 200; tar -czf $OUT/c1a.tgz -C /tmp/o .
base 2; new 2 $((560 - SECONDS)) small; tar -czf $OUT/c1a.tgz -C /tmp/o .
python - <<'PY'
import glob, os, pandas as pd, torch
pd.set_option("display.width", 250); pd.set_option("display.max_rows", 500)
d = pd.concat([pd.read_csv(f) for f in sorted(glob.glob(os.environ["OUT"] + "/w-*.csv"))])
d["v"] = d.tag.str.rstrip("12") + ":" + d.warps.astype(str)
t = d.pivot_table(index=["bits", "batch", "context", "paged", "wl"], columns="v", values="median_us", aggfunc="mean")
print(t.round(2).to_string()); print("max err", d.groupby("v").err.max().to_dict())
print(d[["v", "bits", "batch", "context", "paged", "wl", "plan_warps", "slots"]].drop_duplicates().to_string())
for f in sorted(glob.glob("/tmp/w/new1-*.pt")):
    g = f.replace("new1", "base1")
    if os.path.exists(g):
        a, b = torch.load(f), torch.load(g)
        print(f.split("/")[-1], "bit-identical" if torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) else "DIFFERENT")
PY

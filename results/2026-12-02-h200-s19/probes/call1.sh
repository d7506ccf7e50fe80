#!/usr/bin/env bash
# session 19, call 1 (one H200): three head_dim-128 builds in parallel: b = main 86b123e (.ab/base0), r = redux
# (.ab/base = e95dfed), q = this tree (redux + the query split, f4a6149); probe_q small x3 and large x2 per side,
# interleaved b r q; bit-identity r and q against b.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o; ROOT=$PWD
export FOSCAR_NVCC_DEFINES=FOSCAR_ONLY_HEAD_DIM=128
(MAX_JOBS=6 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build-q.log 2>&1) &
(cd .ab/base && PYTHONPATH=. MAX_JOBS=5 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__, d.__file__)" > /tmp/o/build-r.log 2>&1) &
(cd .ab/base0 && PYTHONPATH=. MAX_JOBS=5 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__, d.__file__)" > /tmp/o/build-b.log 2>&1) &
wait; echo "builds t=$SECONDS"; tail -n1 /tmp/o/build-*.log
side() {  # side tag set
  case $1 in b) dir=.ab/base0;; r) dir=.ab/base;; q) dir=.;; esac
  (cd $dir && PYTHONPATH=. timeout 120 python $ROOT/.ab/probe_q.py $1$2 $OUT/p-$1$2.csv $3 > /tmp/o/p-$1$2.log 2>&1); echo "$1$2 rc=$? t=$SECONDS"; }
for i in 1 2 3; do side b $i small; side r $i small; side q $i small; done
for i in 1 2; do side b L$i large; side r L$i large; side q L$i large; done
python - <<'PY' > /tmp/o/ab-table.txt 2>&1
import glob, os, pandas as pd, torch
pd.set_option("display.width", 250)
d = pd.concat([pd.read_csv(f) for f in sorted(glob.glob(os.environ["OUT"] + "/p-*.csv"))])
d["side"] = d.tag.str[0]
t = d.pivot_table(index=["bits", "batch", "context", "paged", "wl"], columns="side", values="median_us", aggfunc="mean")
t["r/b"] = (t["r"] / t["b"]).round(3); t["q/b"] = (t["q"] / t["b"]).round(3); t["q/r"] = (t["q"] / t["r"]).round(3)
t2 = d.pivot_table(index=["bits", "batch", "context", "paged", "wl"], columns="tag", values="median_us")
print(t2.join(t[["r/b", "q/b", "q/r"]]).to_string()); print("max err", d.groupby("tag").err.max().to_dict())
for f in sorted(glob.glob("/tmp/w/b1-*.pt")) + sorted(glob.glob("/tmp/w/bL1-*.pt")):
    a = torch.load(f)
    for s in "rq":
        o = torch.load(f.replace("/b", "/" + s, 1).replace("/tmp/w/" + s, "/tmp/w/" + s))
        print(s, f.split("/")[-1], "bit-identical" if torch.equal(a[0], o[0]) and torch.equal(a[1], o[1]) else "DIFFERENT")
PY
cat /tmp/o/ab-table.txt
tar -czf $OUT/c1.tgz -C /tmp/o .

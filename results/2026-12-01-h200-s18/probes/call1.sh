#!/usr/bin/env bash
# session 18, call 1 (one H200): (1) two builds in parallel: this tree (s18: partial-tile + finalize_row, all
# instances) and base (.ab/base = e096db4, head_dim 128); (2) probe_p base, new x3 (small points; bit-identity);
# (3) large INT2 points base, new x2; (4) the GPU tests of test_decode_cuda.py and test_ragged_gpu.py on this tree.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o; ROOT=$PWD
(MAX_JOBS=12 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1) &
(cd .ab/base && PYTHONPATH=. FOSCAR_NVCC_DEFINES=FOSCAR_ONLY_HEAD_DIM=128 MAX_JOBS=4 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__, d.__file__)" > /tmp/o/build0.log 2>&1) &
wait; echo "builds t=$SECONDS"; tail -1 /tmp/o/build.log; tail -1 /tmp/o/build0.log
base() { (cd .ab/base && PYTHONPATH=. FOSCAR_NVCC_DEFINES=FOSCAR_ONLY_HEAD_DIM=128 timeout 90 python $ROOT/.ab/probe_p.py base$1 $OUT/p-base$1.csv $2 > /tmp/o/p-base$1.log 2>&1); echo "base$1 rc=$? t=$SECONDS"; }
new() { timeout 90 python .ab/probe_p.py new$1 $OUT/p-new$1.csv $2 > /tmp/o/p-new$1.log 2>&1; echo "new$1 rc=$? t=$SECONDS"; }
base 1 small; new 1 small; base 2 small; new 2 small; base 3 small; new 3 small
base L1 large; new L1 large; base L2 large; new L2 large
python - <<'PY'
import glob, os, pandas as pd, torch
pd.set_option("display.width", 250)
d = pd.concat([pd.read_csv(f) for f in sorted(glob.glob(os.environ["OUT"] + "/p-*.csv"))])
d["side"] = d.tag.str.replace(r"\d+$", "", regex=True)
t = d.pivot_table(index=["bits", "batch", "context", "paged", "wl"], columns="side", values="median_us", aggfunc="mean")
t["new/base"] = (t["new"] / t["base"]).round(3)
t2 = d.pivot_table(index=["bits", "batch", "context", "paged", "wl"], columns="tag", values="median_us")
print(t2.join(t["new/base"]).to_string()); print("max err", d.groupby("tag").err.max().to_dict())
for f in sorted(glob.glob("/tmp/w/new1-*.pt")) + sorted(glob.glob("/tmp/w/newL1-*.pt")):
    a, b = torch.load(f), torch.load(f.replace("/new", "/base"))
    print(f.split("/")[-1], "bit-identical" if torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) else "DIFFERENT")
PY
tar -czf $OUT/c1a.tgz -C /tmp/o .
timeout $((585 - SECONDS)) python -m pytest -m gpu -n 6 -q -rfEx -p no:cacheprovider tests/test_decode_cuda.py tests/test_ragged_gpu.py > /tmp/o/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -8 /tmp/o/gpu_tests.log
tar -czf $OUT/c1b.tgz -C /tmp/o gpu_tests.log

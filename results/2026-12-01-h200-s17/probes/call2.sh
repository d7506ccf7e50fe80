#!/usr/bin/env bash
# session 17, call 2 (one H200): (1) three builds in parallel: main (query-once alone, all instances), base (.ab/base =
# c4d1d9a, head_dim 128) and wide (.ab/wide = 71afbd9, the wide CTAs, head_dim 128); (2) probe_w base, new, base, new
# (4 warps, small points: what query-once alone is worth; bit-identity); (3) ncu of the wide build's decode kernel at
# INT2 1 x 32K and 1 x 16 with 4 and 12 warps (why wide CTAs lose); (4) the GPU suite on main.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o; ROOT=$PWD
(MAX_JOBS=10 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1) &
(cd .ab/base && PYTHONPATH=. FOSCAR_NVCC_DEFINES=FOSCAR_ONLY_HEAD_DIM=128 MAX_JOBS=3 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__, d.__file__)" > /tmp/o/build0.log 2>&1) &
(cd .ab/wide && PYTHONPATH=. FOSCAR_NVCC_DEFINES=FOSCAR_ONLY_HEAD_DIM=128 MAX_JOBS=3 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__, d.__file__)" > /tmp/o/buildw.log 2>&1) &
wait; echo "builds t=$SECONDS"; tail -1 /tmp/o/build.log; tail -1 /tmp/o/build0.log; tail -1 /tmp/o/buildw.log
base() { (cd .ab/base && PYTHONPATH=. FOSCAR_NVCC_DEFINES=FOSCAR_ONLY_HEAD_DIM=128 timeout 60 python $ROOT/.ab/probe_w.py base$1 $OUT/q-base$1.csv 4 small > /tmp/o/q-base$1.log 2>&1); echo "base$1 rc=$? t=$SECONDS"; }
new() { timeout 60 python .ab/probe_w.py new$1 $OUT/q-new$1.csv 4 small > /tmp/o/q-new$1.log 2>&1; echo "new$1 rc=$? t=$SECONDS"; }
base 1; new 1; base 2; new 2
python - <<'PY'
import glob, os, pandas as pd, torch
pd.set_option("display.width", 250)
d = pd.concat([pd.read_csv(f) for f in sorted(glob.glob(os.environ["OUT"] + "/q-*.csv"))])
t = d.pivot_table(index=["bits", "batch", "context"], columns="tag", values="median_us")
t["new/base"] = ((t.new1 + t.new2) / (t.base1 + t.base2)).round(3)
print(t.to_string()); print("max err", d.groupby("tag").err.max().to_dict())
for f in sorted(glob.glob("/tmp/w/new1-*.pt")):
    a, b = torch.load(f), torch.load(f.replace("new1", "base1"))
    print(f.split("/")[-1], "bit-identical" if torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) else "DIFFERENT")
PY
tar -czf $OUT/c2a.tgz -C /tmp/o .
NCU="ncu --clock-control none --kernel-name regex:folded_decode --launch-skip 3 --launch-count 1 --set full --import-source no"
for pt in "2 1 32768" "2 1 16"; do for wv in 4 12; do
  tag=w$wv-$(echo $pt | tr ' ' '-')
  (cd .ab/wide && PYTHONPATH=. FOSCAR_CTA_WARPS=$wv FOSCAR_NVCC_DEFINES=FOSCAR_ONLY_HEAD_DIM=128 timeout 40 $NCU -o /tmp/o/ncu-$tag python $ROOT/.ab/ncu_probe.py auto $pt > /tmp/o/ncu-$tag.log 2>&1); echo "ncu $tag rc=$? t=$SECONDS"
  ncu -i /tmp/o/ncu-$tag.ncu-rep --page details --csv > /tmp/o/ncu-$tag-details.csv 2>/dev/null; rm -f /tmp/o/ncu-$tag.ncu-rep
done; done
tar -czf $OUT/c2b.tgz -C /tmp/o $(cd /tmp/o && ls ncu-*)
timeout $((575 - SECONDS)) python -m pytest -m gpu -n 6 -q -rfEx -p no:cacheprovider --ignore=tests/test_fused_merge_gpu.py tests > /tmp/o/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -8 /tmp/o/gpu_tests.log
tar -czf $OUT/c2c.tgz -C /tmp/o gpu_tests.log

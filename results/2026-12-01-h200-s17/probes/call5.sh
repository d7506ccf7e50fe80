#!/usr/bin/env bash
# session 17, call 5 (call 4's H200, warm): the A/B of call 4 again, new first: is query-once slower at INT2's large points? (bench b8e134b: 64 x 32K 385.0 us against
# 364.3 in session 16's bench, on another GPU, power-capped neighbours.) base (.ab/base = c4d1d9a) and new (HEAD), both
# head_dim 128, one process each, base, new, base, new; INT2 64 x 32K (twice per process), 32 x 32K, 8 x 128K, INT4 64 x 32K.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o; ROOT=$PWD
(FOSCAR_NVCC_DEFINES=FOSCAR_ONLY_HEAD_DIM=128 MAX_JOBS=8 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1) &
(cd .ab/base && PYTHONPATH=. FOSCAR_NVCC_DEFINES=FOSCAR_ONLY_HEAD_DIM=128 MAX_JOBS=8 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__, d.__file__)" > /tmp/o/build0.log 2>&1) &
wait; echo "builds t=$SECONDS"; tail -1 /tmp/o/build.log; tail -1 /tmp/o/build0.log
base() { (cd .ab/base && PYTHONPATH=. FOSCAR_NVCC_DEFINES=FOSCAR_ONLY_HEAD_DIM=128 timeout 100 python $ROOT/.ab/probe_w.py base$1 $OUT/l-base$1.csv 4 large > /tmp/o/l-base$1.log 2>&1); echo "base$1 rc=$? t=$SECONDS"; }
new() { FOSCAR_NVCC_DEFINES=FOSCAR_ONLY_HEAD_DIM=128 timeout 100 python .ab/probe_w.py new$1 $OUT/l-new$1.csv 4 large > /tmp/o/l-new$1.log 2>&1; echo "new$1 rc=$? t=$SECONDS"; }
export PROBE_SET=b; new 1; base 1; tar -czf $OUT/c5.tgz -C /tmp/o .; new 2; base 2; tar -czf $OUT/c5.tgz -C /tmp/o .
nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
python - <<'PY'
import glob, os, pandas as pd
pd.set_option("display.width", 250)
d = pd.concat([pd.read_csv(f) for f in sorted(glob.glob(os.environ["OUT"] + "/l-*.csv"))])
print(d[["tag", "bits", "batch", "context", "median_us", "p20", "p80", "err"]].to_string())
t = d.groupby(["bits", "batch", "context", "tag"]).median_us.median().unstack()
t["new/base"] = ((t.new1 + t.new2) / (t.base1 + t.base2)).round(4)
print(t.to_string())
PY

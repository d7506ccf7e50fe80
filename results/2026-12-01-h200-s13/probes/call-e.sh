#!/usr/bin/env bash
# session 13, call E (one H200): the split merge with 1, 4, 2 programs per output row (FOSCAR_MERGE_D_SLICES,
# NOTES §42): foscar bench of the FOSCAR kernels at batch 1 / 8 / 64 x 8K / 32K, runs in the order d1, d4, d2, d1;
# then the merge GPU tests.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
export FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128"
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; echo "build rc=$? t=$SECONDS"
i=0
for d in 1 4 2 1; do
  i=$((i + 1))
  FOSCAR_MERGE_D_SLICES=$d timeout 70 foscar bench --arch h200 --operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --bits 2 --bits 4 --batch 1 --batch 8 --batch 64 --context 8192 --context 32768 --grid sweep --format quiet --out /tmp/o/r$i-d$d > /tmp/o/r$i-d$d.log 2>&1; echo "run $i d=$d rc=$? t=$SECONDS"
done
python - <<'PY'
import glob, pandas as pd
runs = sorted(glob.glob("/tmp/o/r*-d*/results.csv"))
cols = {}
for f in runs:
    d = pd.read_csv(f); tag = f.split("/")[-2]
    cols[tag] = d.set_index(["kernel", "bits", "batch", "context"]).median_us
t = pd.DataFrame(cols)
base = t[[c for c in t.columns if c.endswith("d1")]].mean(axis=1)
for c in t.columns:
    t[c + "/d1"] = (t[c] / base).round(3)
pd.set_option("display.width", 250)
print(t.round(2).to_string())
PY
tar -czf $OUT/e1.tgz -C /tmp/o $(cd /tmp/o && ls -d r*) build.log
timeout $((500 - SECONDS)) python -m pytest -m gpu -q -rfEx -p no:cacheprovider tests/test_merge_slots.py > /tmp/o/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -3 /tmp/o/gpu_tests.log
tar -czf $OUT/e2.tgz -C /tmp/o gpu_tests.log
echo "t=$SECONDS"

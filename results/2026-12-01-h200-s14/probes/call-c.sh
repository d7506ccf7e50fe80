#!/usr/bin/env bash
# session 14, call C (one H200): the decode kernel launched with PDL as well (-DFOSCAR_PDL=1), now that the merge
# kernel (launched with PDL) triggers its dependents right after its wait (NOTES §45). Two head_dim-128 builds;
# FOSCAR rows in the order base, dpdl, dpdl-nt (the merge without PDL: it never triggers, as a kernel before the
# decode in a serving step may not), base, dpdl; the ragged grid base / dpdl; then FlashInfer's decodes at 16
# tokens and 8K with PDL (its default) and without (.ab/fi_nopdl.py).
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
B0="FOSCAR_ONLY_HEAD_DIM=128"
B1="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_PDL=1"
(FOSCAR_NVCC_DEFINES="$B0" MAX_JOBS=8 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build0.log 2>&1) &
(FOSCAR_NVCC_DEFINES="$B1" MAX_JOBS=8 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build1.log 2>&1) &
wait; echo "builds t=$SECONDS"; tail -1 /tmp/o/build0.log; tail -1 /tmp/o/build1.log
run() {  # name defines merge-pdl timeout bench-args...
  local name=$1 defines=$2 pdl=$3 lim=$4; shift 4
  FOSCAR_NVCC_DEFINES="$defines" FOSCAR_MERGE_PDL=$pdl timeout $lim foscar bench --arch h200 --operand bf16 \
    --kernel foscar-cuda --kernel foscar-cuda-paged --bits 2 --bits 4 "$@" --format quiet --out /tmp/o/$name > /tmp/o/$name.log 2>&1
  echo "$name rc=$? t=$SECONDS"
}
U="--batch 1 --batch 8 --batch 64 --context 16 --context 8192 --context 32768 --grid sweep"
run u1-base "$B0" 1 80 $U
run u2-dpdl "$B1" 1 80 $U
run u3-dpdlnt "$B1" 0 80 $U
run u4-base "$B0" 1 80 $U
run u5-dpdl "$B1" 1 80 $U
run r1-base "$B0" 1 60 --grid ragged
run r2-dpdl "$B1" 1 60 --grid ragged
FI="--arch h200 --operand bf16 --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --bits 2 --batch 1 --batch 8 --batch 64 --context 16 --context 8192 --grid sweep --format quiet"
timeout 90 foscar bench $FI --out /tmp/o/f1-pdl > /tmp/o/f1-pdl.log 2>&1; echo "f1-pdl rc=$? t=$SECONDS"
timeout 90 python .ab/fi_nopdl.py bench $FI --out /tmp/o/f2-nopdl > /tmp/o/f2-nopdl.log 2>&1; echo "f2-nopdl rc=$? t=$SECONDS"
python - <<'PY'
import glob, pandas as pd
pd.set_option("display.width", 250); pd.set_option("display.max_rows", 200)
for grid in ("u", "r", "f"):
    cols = {}
    for f in sorted(glob.glob(f"/tmp/o/{grid}[0-9]-*/results.csv")):
        d = pd.read_csv(f); d = d[d.status.isin(["ok", "suspect"])]; tag = f.split("/")[-2]
        cols[tag] = d.groupby(["kernel", "bits", "batch", "context", "workload", "capacity"], dropna=False).median_us.min()
    if not cols: continue
    t = pd.DataFrame(cols)
    bases = [c for c in t.columns if c.endswith("base") or c.endswith("-pdl")]
    base = t[bases].mean(axis=1)
    for c in list(t.columns):
        t[c + "/b"] = (t[c] / base).round(3)
    print(t.round(2).to_string())
PY
tar -czf $OUT/c.tgz -C /tmp/o $(cd /tmp/o && ls -d u[0-9]-* r[0-9]-* f[0-9]-* 2>/dev/null) build0.log build1.log
echo "t=$SECONDS"

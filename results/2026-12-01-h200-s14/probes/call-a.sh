#!/usr/bin/env bash
# session 14, call A (one H200): the merge kernel launched with PDL (NOTES §43). Two head_dim-128 builds (the
# decode kernel's trigger after its main loop = default, and at its start), then foscar bench of the FOSCAR rows
# with FOSCAR_MERGE_PDL=0 / 1 in the order base, mpdl, early, base2, early2; then the ragged grid base / early.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
B0="FOSCAR_ONLY_HEAD_DIM=128"
B1="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_PDL_EARLY_TRIGGER=1"
(FOSCAR_NVCC_DEFINES="$B0" MAX_JOBS=8 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build0.log 2>&1) &
(FOSCAR_NVCC_DEFINES="$B1" MAX_JOBS=8 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build1.log 2>&1) &
wait; echo "builds t=$SECONDS"; tail -1 /tmp/o/build0.log; tail -1 /tmp/o/build1.log
run() {  # name defines pdl timeout bench-args...
  local name=$1 defines=$2 pdl=$3 lim=$4; shift 4
  FOSCAR_NVCC_DEFINES="$defines" FOSCAR_MERGE_PDL=$pdl timeout $lim foscar bench --arch h200 --operand bf16 \
    --kernel foscar-cuda --kernel foscar-cuda-paged --bits 2 --bits 4 "$@" --format quiet --out /tmp/o/$name > /tmp/o/$name.log 2>&1
  echo "$name rc=$? t=$SECONDS"
}
U="--batch 1 --batch 8 --batch 64 --context 16 --context 8192 --context 32768 --grid sweep"
run u1-base "$B0" 0 80 $U
run u2-mpdl "$B0" 1 80 $U
run u3-early "$B1" 1 80 $U
run u4-base "$B0" 0 80 $U
[ $SECONDS -lt 420 ] && run u5-early "$B1" 1 80 $U
[ $SECONDS -lt 470 ] && run r1-base "$B0" 0 60 --grid ragged
[ $SECONDS -lt 530 ] && run r2-early "$B1" 1 60 --grid ragged
python - <<'PY'
import glob, pandas as pd
pd.set_option("display.width", 250); pd.set_option("display.max_rows", 200)
for grid in ("u", "r"):
    cols = {}
    for f in sorted(glob.glob(f"/tmp/o/{grid}[0-9]-*/results.csv")):
        d = pd.read_csv(f); d = d[d.status == "ok"]; tag = f.split("/")[-2]
        cols[tag] = d.set_index(["kernel", "bits", "batch", "context", "workload", "capacity"]).median_us
    if not cols: continue
    t = pd.DataFrame(cols)
    base = t[[c for c in t.columns if c.endswith("base")]].mean(axis=1)
    for c in list(t.columns):
        t[c + "/b"] = (t[c] / base).round(3)
    print(t.round(2).to_string())
PY
tar -czf $OUT/a.tgz -C /tmp/o $(cd /tmp/o && ls -d u[0-9]-* r[0-9]-* 2>/dev/null) build0.log build1.log
echo "t=$SECONDS"

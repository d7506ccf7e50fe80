#!/usr/bin/env bash
# session 15, call A (one H200): PV on integer tensor cores (FOSCAR_IMMA_PV=1). Builds: ipv with every head_dim
# (the tests), base and ipv at head_dim 128 (the A/B). Then the kernel's GPU tests on ipv, then foscar bench of
# the FOSCAR rows, order base, ipv, base2, ipv2.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
BF="FOSCAR_IMMA_PV=1"
B0="FOSCAR_ONLY_HEAD_DIM=128"
B1="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_IMMA_PV=1"
(FOSCAR_NVCC_DEFINES="$BF" MAX_JOBS=8 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/buildf.log 2>&1) &
(FOSCAR_NVCC_DEFINES="$B0" MAX_JOBS=4 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build0.log 2>&1) &
(FOSCAR_NVCC_DEFINES="$B1" MAX_JOBS=4 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build1.log 2>&1) &
wait; echo "builds t=$SECONDS"; tail -1 /tmp/o/buildf.log; tail -1 /tmp/o/build0.log; tail -1 /tmp/o/build1.log
FOSCAR_NVCC_DEFINES="$BF" timeout 200 python -m pytest -q -m gpu -n 6 -p no:cacheprovider tests/test_decode_cuda.py tests/test_paged.py \
  tests/test_channel_k.py tests/test_ragged_gpu.py tests/test_bad_inputs.py -k "not all_head_dims" > /tmp/o/tests-ipv.log 2>&1
echo "tests rc=$? t=$SECONDS"; tail -15 /tmp/o/tests-ipv.log
run() {  # name defines timeout bench-args...
  local name=$1 defines=$2 lim=$3; shift 3
  FOSCAR_NVCC_DEFINES="$defines" timeout $lim foscar bench --arch h200 --operand bf16 \
    --kernel foscar-cuda --kernel foscar-cuda-paged --bits 2 --bits 4 "$@" --format quiet --out /tmp/o/$name > /tmp/o/$name.log 2>&1
  echo "$name rc=$? t=$SECONDS"
}
U="--batch 1 --batch 8 --batch 64 --context 8192 --context 32768 --context 131072 --grid sweep"
run u1-base "$B0" 80 $U
run u2-ipv "$B1" 80 $U
[ $SECONDS -lt 440 ] && run u3-base "$B0" 70 $U
[ $SECONDS -lt 510 ] && run u4-ipv "$B1" 70 $U
python - <<'PY'
import glob, pandas as pd
pd.set_option("display.width", 250); pd.set_option("display.max_rows", 200)
cols, err = {}, {}
for f in sorted(glob.glob("/tmp/o/u[0-9]-*/results.csv")):
    d = pd.read_csv(f); d = d[d.status == "ok"]; tag = f.split("/")[-2]
    d = d.set_index(["kernel", "bits", "batch", "context"])
    cols[tag] = d.median_us
    if "max_rel_err" in d: err[tag] = d.max_rel_err
t = pd.DataFrame(cols)
base = t[[c for c in t.columns if c.endswith("base")]].mean(axis=1)
for c in list(t.columns):
    t[c + "/b"] = (t[c] / base).round(3)
print(t.round(2).to_string())
if err: print(pd.DataFrame(err).to_string())
PY
tar -czf $OUT/a.tgz -C /tmp/o $(cd /tmp/o && ls -d u[0-9]-* 2>/dev/null) buildf.log build0.log build1.log tests-ipv.log
echo "t=$SECONDS"

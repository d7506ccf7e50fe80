#!/usr/bin/env bash
# session 15, call B (one H200), on the branch with the integer PV on by default for INT2 (NOTES §46):
# (1) the full default build and a head_dim-128 build with FOSCAR_IMMA_PV=0; (2) the GPU suite (but the fused-merge
# build's tests and the HF model runs); (3) the full bench; (4) INT2 G=32 and G=64: integer PV against BF16 PV.
K="--operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --kernel flashinfer-fa2-tc-fp8 --kernel flashinfer-xqa-fp8"
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
B0="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_IMMA_PV=0"
(MAX_JOBS=11 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1) &
(FOSCAR_NVCC_DEFINES="$B0" MAX_JOBS=5 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build0.log 2>&1) &
wait; echo "builds t=$SECONDS"; tail -1 /tmp/o/build.log; tail -1 /tmp/o/build0.log
timeout 170 python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider --ignore=tests/test_fused_merge_gpu.py --ignore=tests/test_hf.py tests > /tmp/o/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -4 /tmp/o/gpu_tests.log
tar -czf $OUT/b0.tgz -C /tmp/o gpu_tests.log build.log build0.log
t0=$SECONDS; timeout 230 foscar bench --arch h200 $K --out /tmp/o/bench > /tmp/o/bench.log 2>&1; echo "bench rc=$? wall=$((SECONDS - t0)) s t=$SECONDS"
grep -A8 "geomean\|Geomean" /tmp/o/bench.log | head -40
nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/b1.tgz -C /tmp/o bench bench.log
run() {  # name defines group timeout
  FOSCAR_NVCC_DEFINES="$2" timeout $4 foscar bench --arch h200 --operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged \
    --bits 2 --group-size $3 --batch 8 --batch 64 --context 8192 --context 32768 --grid sweep --format quiet --out /tmp/o/$1 > /tmp/o/$1.log 2>&1
  echo "$1 rc=$? t=$SECONDS"
}
for gs in 64 32; do
  [ $SECONDS -lt 540 ] && run g$gs-1-base "$B0" $gs 30
  [ $SECONDS -lt 555 ] && run g$gs-2-ipv "" $gs 30
done
python - <<'PY'
import glob, pandas as pd
pd.set_option("display.width", 250)
for gs in (64, 32):
    cols = {}
    for f in sorted(glob.glob(f"/tmp/o/g{gs}-*/results.csv")):
        d = pd.read_csv(f); d = d[d.status == "ok"]; tag = f.split("/")[-2]
        d = d.set_index(["kernel", "bits", "batch", "context"]); cols[tag] = d.median_us; cols[tag + " err"] = d.max_rel_err
    if len(cols) == 4:
        t = pd.DataFrame(cols); t["ipv/base"] = (t[f"g{gs}-2-ipv"] / t[f"g{gs}-1-base"]).round(3); print(f"G={gs}"); print(t.to_string())
PY
tar -czf $OUT/b2.tgz -C /tmp/o $(cd /tmp/o && ls -d g[0-9]* 2>/dev/null)
echo "t=$SECONDS"

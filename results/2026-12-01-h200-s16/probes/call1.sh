#!/usr/bin/env bash
# session 16, call 1 (one H200), on cde2514 (one chunk per sequence: one fixed split, no merge launch; NOTES §48),
# against the Python of d7f7d8d (.ab/base; the same kernel sources, so the same cached build):
# (1) the default build; (2) the fixed cost (16-token sequences, batch 1/8/64): new with FlashInfer, base, new again;
# (3) the FOSCAR rows at 32 x 8K / 32 x 32K (the bench's one-chunk points): base, new, base, new;
# (4) split sweep at batch 1 (16 / 32 splits, auto) at 32K and 128K; (5) ncu of the 16-token decode at batch 1;
# (6) if time is left: the fused-merge build and its tests.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
FI="--kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa"
ctx16() {  # name dir extra-kernels
  t0=$SECONDS; (cd $2 && timeout 100 python -m foscar_cli bench --arch h200 --operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged $3 \
    --bits 2 --bits 4 --batch 1 --batch 8 --batch 64 --context 16 --grid sweep --format quiet --out /tmp/o/$1 > /tmp/o/$1.log 2>&1); echo "$1 rc=$? wall=$((SECONDS - t0)) t=$SECONDS"
}
ctx16 ctx16-1-new . "$FI"
ctx16 ctx16-2-base .ab/base ""
ctx16 ctx16-3-new . ""
b32() {
  t0=$SECONDS; (cd $2 && timeout 60 python -m foscar_cli bench --arch h200 --operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged \
    --bits 2 --bits 4 --batch 32 --context 8192 --context 32768 --grid sweep --format quiet --out /tmp/o/$1 > /tmp/o/$1.log 2>&1); echo "$1 rc=$? wall=$((SECONDS - t0)) t=$SECONDS"
}
b32 b32-1-base .ab/base; b32 b32-2-new .; b32 b32-3-base .ab/base; b32 b32-4-new .
python - <<'PY'
import glob, pandas as pd
pd.set_option("display.width", 250)
for pre in ("ctx16", "b32"):
    cols = {}
    for f in sorted(glob.glob(f"/tmp/o/{pre}-*/results.csv")):
        d = pd.read_csv(f); tag = f.split("/")[-2]; d = d[d.status == "ok"]
        d = d.set_index(["kernel", "bits", "batch", "context"]); cols[tag] = d.median_us.round(2)
    t = pd.DataFrame(cols); print(t.to_string())
PY
t0=$SECONDS; timeout 120 python scripts/split_sweep.py /tmp/o/sweep-b1 --batch 1 --context 32768 --context 131072 --splits 8 --splits 16 --splits 24 --splits 32 > /tmp/o/sweep-b1.log 2>&1; echo "sweep rc=$? wall=$((SECONDS - t0)) t=$SECONDS"; tail -20 /tmp/o/sweep-b1.log
tar -czf $OUT/c1a.tgz -C /tmp/o build.log $(cd /tmp/o && ls -d ctx16-* b32-* sweep-b1*)
NCU="ncu --clock-control none --kernel-name regex:folded_decode --launch-skip 3 --launch-count 1"
for b in 1 8; do
timeout 60 $NCU --set full --import-source no -o /tmp/o/ncu-ctx16-b$b python .ab/ncu_probe.py auto 2 $b 16 > /tmp/o/ncu-b$b.log 2>&1; echo "ncu b$b rc=$? t=$SECONDS"
ncu -i /tmp/o/ncu-ctx16-b$b.ncu-rep --page details --csv > /tmp/o/ncu-ctx16-b$b-details.csv 2>/dev/null
ncu -i /tmp/o/ncu-ctx16-b$b.ncu-rep --page source --csv --print-source sass > /tmp/o/ncu-ctx16-b$b-sass.csv 2>/dev/null
rm -f /tmp/o/*.ncu-rep
done
tar -czf $OUT/c1b.tgz -C /tmp/o $(cd /tmp/o && ls ncu-*)
if [ $SECONDS -lt 380 ]; then
  FOSCAR_MERGE=fused MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/buildf.log 2>&1; echo "fused built t=$SECONDS"
  FOSCAR_MERGE=fused timeout $((570 - SECONDS)) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_fused_merge_gpu.py tests/test_ragged_gpu.py > /tmp/o/gpu_tests_fused.log 2>&1; echo "fused tests rc=$? t=$SECONDS"; tail -3 /tmp/o/gpu_tests_fused.log
  tar -czf $OUT/c1c.tgz -C /tmp/o buildf.log gpu_tests_fused.log
fi
nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
echo "t=$SECONDS"

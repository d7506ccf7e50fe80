#!/usr/bin/env bash
# session 15, call D (one H200), on main with the integer PV: the fixed cost (16-token sequences, batch 1 / 8 / 64,
# FOSCAR and FlashInfer fa2 / fa2-tc / xqa, as §44), then the INT4 rows that compare flagged in §47, again.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
t0=$SECONDS; timeout 90 foscar bench --arch h200 --operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --bits 2 --bits 4 --batch 1 --batch 8 --batch 64 --context 16 --grid sweep --out /tmp/o/ctx16 > /tmp/o/ctx16.log 2>&1; echo "ctx16 rc=$? wall=$((SECONDS - t0)) s t=$SECONDS"
t0=$SECONDS; timeout 60 foscar bench --arch h200 --operand bf16 --kernel foscar-cuda --bits 4 --batch 8 --batch 64 --context 8192 --context 131072 --grid sweep --format quiet --out /tmp/o/int4 > /tmp/o/int4.log 2>&1; echo "int4 rc=$? wall=$((SECONDS - t0)) s t=$SECONDS"
python - <<'PY'
import pandas as pd
pd.set_option("display.width", 200)
for run in ("ctx16", "int4"):
    d = pd.read_csv(f"/tmp/o/{run}/results.csv")
    print(d[["kernel", "bits", "batch", "context", "median_us", "status", "clock_note"]].to_string())
PY
nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/d.tgz -C /tmp/o ctx16 ctx16.log int4 int4.log build.log
echo "t=$SECONDS"

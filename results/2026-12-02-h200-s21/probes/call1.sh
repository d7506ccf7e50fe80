#!/usr/bin/env bash
# session 21, call 1 (one H200), on main b6b2c57 (fixed-window merge, 01bd66b, not benched before; merge_triton refactor b6b2c57): the default build,
# the full bench (s6 kernel subset, as §47), then the fixed cost (16-token sequences, batch 1 / 8 / 64, as §47).
K="--operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --kernel flashinfer-fa2-tc-fp8 --kernel flashinfer-xqa-fp8"
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
t0=$SECONDS; timeout 300 foscar bench --arch h200 $K --out /tmp/o/bench > /tmp/o/bench.log 2>&1; echo "bench rc=$? wall=$((SECONDS - t0)) s t=$SECONDS"
grep -B2 -A12 -i "geomean\|geometric" /tmp/o/bench.log | tail -40
tar -czf $OUT/c4a.tgz -C /tmp/o bench bench.log build.log
nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
t0=$SECONDS; timeout $((560 - SECONDS)) foscar bench --arch h200 --operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --bits 2 --bits 4 --batch 1 --batch 8 --batch 64 --context 16 --grid sweep --format quiet --out /tmp/o/ctx16 > /tmp/o/ctx16.log 2>&1; echo "ctx16 rc=$? wall=$((SECONDS - t0)) s t=$SECONDS"
tar -czf $OUT/c4b.tgz -C /tmp/o ctx16 ctx16.log
python - <<'PY'
import pandas as pd
pd.set_option("display.width", 200)
d = pd.read_csv("/tmp/o/ctx16/results.csv")
print(d[["kernel", "bits", "batch", "context", "median_us", "status", "clock_note"]].to_string())
PY
echo "t=$SECONDS"
nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
timeout $((590 - SECONDS)) python -m pytest -m gpu -n 6 -q -rfEx -p no:cacheprovider --ignore=tests/test_fused_merge_gpu.py tests > /tmp/o/suite.log 2>&1; echo "suite rc=$? t=$SECONDS"; tail -6 /tmp/o/suite.log
cp /tmp/o/suite.log $OUT/suite.log

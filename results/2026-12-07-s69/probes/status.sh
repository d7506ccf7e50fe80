#!/usr/bin/env bash
# Session 69: the README's Status command (the whole preset of the GPU's arch with FlashInfer's five baselines and read
# floors), last run on an H200 in session 42 (bf3777b) and on an H100 in session 54 (688c680). Since then the kernels
# the preset's plans take changed in sessions 57-59 (one 256-token iteration a chunk where the grid stays at most one
# CTA an SM, §103; INT4 on the integer PV at gqa 5-8, §102; INT4 channel-wise on the integer PV, §104); sessions 60-68
# changed plans past 128K only, outside the preset. Sourced by s69c1.sh / s69c2.sh after probe_preamble.sh.
# Expected (written before the run):
#   H200: foscar-cuda INT2 uniform geomean against FlashInfer BF16 at its best 4.9-5.2x (s42 5.00x), INT4 3.18-3.30x,
#   INT2 against FlashInfer's FP8 cache 3.9-4.1x; ragged INT2 4.5-4.8x; max_rel_err <= 2e-3 at INT2 (BF16 operands);
#   issue 12: INT2 at batch x context >= 256K at 85% of the ceiling at 4-6 of 8 points (8 x 32K 80-84%, 32 x 8K,
#   64 x 8K and 64 x 32K 82-86%).
#   H100: INT2 5.40-5.50x (s48/s54 5.44x), INT4 3.29-3.35x (s54 3.31x), 8 of 8 large INT2 points at 85%.
ARCH=h100; nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && ARCH=h200
timeout $(( $(left) - 25 )) foscar bench --arch $ARCH --operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged \
  --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --kernel flashinfer-fa2-tc-fp8 \
  --kernel flashinfer-xqa-fp8 --read-floor --out $W/bench --format quiet > $W/bench.log 2>&1
echo "S: bench rc=$? left=$(left)"; tail -3 $W/bench.log
python - <<'PY' 2>&1 | tee $OUT/issue12-table.txt
import json, pandas as pd
d = pd.read_csv("/tmp/s69/bench/results.csv")
f = d[(d.kernel == "foscar-cuda") & (d.workload == "uniform") & (d.bits == 2)]
cols = ["bits", "batch", "context", "median_us", "tbps", "sol_fraction", "floor_fraction", "max_rel_err",
        "sm_clock_during_mhz", "status"]
print(f[[c for c in cols if c in f]].to_string(index=False))
big = f[(f.batch * f.context >= 262144) & (f.status == "ok")]
print(f"large INT2 points at >= 85% of the ceiling: {(big.sol_fraction >= 0.85).sum()} of {len(big)}")
print(json.dumps(json.load(open("/tmp/s69/bench/summary.json")), indent=1)[:6000])
PY
cp $W/bench/results.csv $OUT/bench-results.csv; cp $W/bench/meta.json $OUT/bench-meta.json
cp $W/bench/summary.json $OUT/bench-summary.json

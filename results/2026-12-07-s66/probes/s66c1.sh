#!/usr/bin/env bash
# Prepared in session 65 (as next-s66c1.sh); run in session 66 as its first call. At most LIMIT (default 420) s.
# Run from the repository root through scripts/gpu_offline.sh (carry .offline). After a refused request, name
# `kind: nvidia-h100-x1` for ten minutes (a call free to take either kind then asks for an H200 only).
#   On an H200, B: issue 12's INT2 bench as s65c1.sh's H200 branch (expectations there, written in session 60).
#   Then (any GPU; written in session 65 before any run), rounds new k/old ... :
#   K: the folded BF16 mode's two levels (new, the default) against the merge kernel (k: FOSCAR_MERGE=kernel), because
#      session 65's call 1 saw the merge kernel take FP8's 1 x 512K from 42.7 to 30.9 us, more than the two levels
#      took off BF16 in session 64 (35.3 -> 24.8). Expected: k / new 0.95-1.05 at INT2 / INT4 1 x 512K and one 512K
#      among seven 4K, 8 query heads over 1 KV head; max_rel_err the same.
#   S: FP8 where the plan allows more than 32 chunks but the call's length takes fewer (one lognormal length, 54529
#      tokens, in a 512K cache: 31 chunks either way): new (the merge kernel) against old (FOSCAR_MERGE_TREE=0, the
#      in-kernel merge). Expected: new / old 1.00-1.08 (a second launch, partly hidden by PDL). At this point k is
#      new's plan (an A/A: 0.98-1.02); at the BF16 points old is one merging CTA (session 64's 0.70-0.75 again).
LIMIT="${LIMIT:-420}"
. scripts/probe_preamble.sh /tmp/s66c1
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  timeout 170 foscar bench --arch h200 --bits 2 --operand bf16 --kernel foscar-cuda --grid sweep \
    --batch 8 --batch 32 --batch 64 --context 8192 --context 32768 --context 131072 --read-floor --out $W/bench \
    --format quiet > $W/bench.log 2>&1
  echo "B: bench rc=$? left=$(left)"; tail -3 $W/bench.log
  python - <<'PY' 2>&1 | tee $W/bench-table.txt
import pandas as pd
d = pd.read_csv("/tmp/s66c1/bench/results.csv")
d = d[d.kernel == "foscar-cuda"]
cols = ["bits", "batch", "context", "median_us", "tbps", "sol_fraction", "floor_fraction", "max_rel_err",
        "sm_clock_during_mhz", "status"]
print(d[[c for c in cols if c in d]].to_string(index=False))
big = d[(d.batch * d.context >= 262144) & (d.status == "ok")]
print(f"large points at >= 85% of the ceiling: {(big.sol_fraction >= 0.85).sum()} of {len(big)}")
PY
  cp $W/bench-table.txt $OUT/bench-table.txt; cp $W/bench/results.csv $OUT/bench-results.csv 2>/dev/null
  cp $W/bench/meta.json $OUT/bench-meta.json 2>/dev/null
fi
python -m bench.ab_rounds $W/ab --variant "new:" --variant "k:" --variant "old:" --run-env k:FOSCAR_MERGE=kernel \
  --run-env old:FOSCAR_MERGE_TREE=0 --order "new k old old k new" \
  --point 2x1x524288:h8-1 --point 4x1x524288:h8-1 --point 2x8x524288:one-long:h8-1 \
  --point 2x1x524288:lognormal:h8-1:fp8 \
  --limit-s $(( $(left) - 10 )) --round-s 10 > $W/ab_rounds.log 2>&1
echo "K/S: ab_rounds rc=$? left=$(left)"; tail -24 $W/ab_rounds.log; cp $W/ab_rounds.log $OUT/ab_rounds.txt
probe_end s66c1

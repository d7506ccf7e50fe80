#!/usr/bin/env bash
# Session 65, call 3 (the device time left after calls 1-2: at most LIMIT, default 300 s; a fresh machine).
#   On an H200, B: issue 12's INT2 bench as s65c1.sh's H200 branch (expectations there, written in session 60).
#   Otherwise K: the folded BF16 mode's two-level merge against the merge kernel (k: FOSCAR_MERGE=kernel), because
#      call 1 showed the merge kernel taking FP8's 1 x 512K from 42.7 to 30.9 us, more than the two levels gained at
#      BF16 in session 64 (35.3 -> 24.8). Expected (written before the run): k / new 0.95-1.05 at INT2 / INT4 1 x 512K
#      and one 512K among seven 4K, 8 query heads over 1 KV head; max_rel_err the same.
LIMIT="${LIMIT:-300}"
. scripts/probe_preamble.sh /tmp/s65c3
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  timeout 170 foscar bench --arch h200 --bits 2 --operand bf16 --kernel foscar-cuda --grid sweep \
    --batch 8 --batch 32 --batch 64 --context 8192 --context 32768 --context 131072 --read-floor --out $W/bench \
    --format quiet > $W/bench.log 2>&1
  echo "B: bench rc=$? left=$(left)"; tail -3 $W/bench.log
  python - <<'PY' 2>&1 | tee $W/bench-table.txt
import pandas as pd
d = pd.read_csv("/tmp/s65c3/bench/results.csv")
d = d[d.kernel == "foscar-cuda"]
cols = ["bits", "batch", "context", "median_us", "tbps", "sol_fraction", "floor_fraction", "max_rel_err",
        "sm_clock_during_mhz", "status"]
print(d[[c for c in cols if c in d]].to_string(index=False))
big = d[(d.batch * d.context >= 262144) & (d.status == "ok")]
print(f"large points at >= 85% of the ceiling: {(big.sol_fraction >= 0.85).sum()} of {len(big)}")
PY
  cp $W/bench-table.txt $OUT/bench-table.txt; cp $W/bench/results.csv $OUT/bench-results.csv 2>/dev/null
  cp $W/bench/meta.json $OUT/bench-meta.json 2>/dev/null
else
  python -m bench.ab_rounds $W/ab --variant "new:" --variant "k:" --run-env k:FOSCAR_MERGE=kernel \
    --order "new k k new" --point 2x1x524288:h8-1 --point 4x1x524288:h8-1 --point 2x8x524288:one-long:h8-1 \
    --limit-s $(( $(left) - 10 )) --round-s 10 > $W/ab_rounds.log 2>&1
  echo "K: ab_rounds rc=$? left=$(left)"; tail -20 $W/ab_rounds.log; cp $W/ab_rounds.log $OUT/ab_rounds.txt
fi
probe_end s65c3

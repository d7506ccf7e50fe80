#!/usr/bin/env bash
# Session 63, call 1. At most LIMIT (default 480) s. Run from the repository root through scripts/gpu_offline.sh (carry
# .offline). A head_dim-128 build (FOSCAR_ONLY_HEAD_DIM=128: the same kernels as the default build there), then
# on an H200: session 62's s62c3.sh H200 branch (session 60's s60c1.sh; its expectations stand, written in session 60):
#   B: issue 12's open target, `foscar bench` INT2 BF16 operands, FOSCAR's CUDA kernel only, batches 8 / 32 / 64 x
#      contexts 8K / 32K / 128K with read floors. Expected 4-5 of the 8 points of batch x context >= 256K at 85%
#      (8 x 32K 79-82%, 32 x 8K 80-85%, 64 x 8K 80-86%, 64 x 32K 82-88%, the 128K points and 32 x 32K 86-97%).
#   A: the prefetch A/B (default / FOSCAR_PREWAIT_PREFETCH=4) at INT2 8 x 32K, 32 x 8K, 8 x 32K lognormal, in what is
#      left. Expected new / old 0.96-0.98, 0.97-0.99, 0.85-0.92; outputs bit-identical.
# on an H100 (issue 12's H100 bench ran in session 62): P2, long chunks on paged caches at 192K, never timed (session
#   62's "not measured"): old = FOSCAR_LONG_CHUNKS=0, new = the default, 8 query heads over 1 KV head, 16-token pages.
#   Expected (written before, from the contiguous 192K points' 0.897 / 0.909 and paged 512K's equal-to-contiguous
#   gains): INT2 1 x 192K paged 0.86-0.93, INT2 2 x 192K paged 0.86-0.93, INT4 2 x 192K paged 0.90-1.00 (INT4 gained
#   less at 512K); max_rel_err <= 2e-3.
#   L, then: long chunks over two programs an SM (old = the default, new = FOSCAR_LONG_CHUNK_PROGRAMS=2; 256 CTAs of
#   4K-token chunks, two an SM, where one an SM streamed 8K each with four warps). Expected (written before): INT2
#   2 x 512K paged (47.1 us, 56% of the ceiling) 0.75-0.90; INT2 2 x 512K contiguous (42.7 us) 0.80-0.95; INT4
#   2 x 512K paged (66.3 us, 72%) 0.85-0.97; INT2 2 x 512K at 16 query heads over 2 KV heads (32 -> 64 chunks a
#   sequence) 0.85-1.00; max_rel_err <= 2e-3 in both.
LIMIT="${LIMIT:-480}"
. scripts/probe_preamble.sh /tmp/s63c1  # T0, LIMIT, left(), gpu.csv, commit.txt, W, probe_end
HD="FOSCAR_ONLY_HEAD_DIM=128"
FOSCAR_NVCC_DEFINES="$HD" MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' \
  > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
ARCH=h100; nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && ARCH=h200
if [ $ARCH = h200 ]; then
  FOSCAR_NVCC_DEFINES="$HD" timeout $(( $(left) - 150 )) foscar bench --arch $ARCH --bits 2 --operand bf16 \
    --kernel foscar-cuda --grid sweep --batch 8 --batch 32 --batch 64 --context 8192 --context 32768 \
    --context 131072 --read-floor --out $W/bench --format quiet > $W/bench.log 2>&1
  echo "B ($ARCH): bench rc=$? left=$(left)"; tail -3 $W/bench.log
  python - <<'PY' 2>&1 | tee $W/bench-table.txt
import pandas as pd
d = pd.read_csv("/tmp/s63c1/bench/results.csv")
d = d[d.kernel == "foscar-cuda"]
cols = ["bits", "batch", "context", "median_us", "p20_us", "p80_us", "tbps", "sol_fraction", "floor_fraction",
        "max_rel_err", "sm_clock_before_mhz", "sm_clock_after_mhz", "sm_clock_during_mhz", "clock_events_after",
        "status"]
print(d[[c for c in cols if c in d]].to_string(index=False))
big = d[(d.batch * d.context >= 262144) & (d.status == "ok")]
print(f"large points at >= 85% of the ceiling: {(big.sol_fraction >= 0.85).sum()} of {len(big)}")
PY
  cp $W/bench-table.txt $OUT/bench-table.txt; cp $W/bench/results.csv $OUT/bench-results.csv 2>/dev/null
  cp $W/bench/meta.json $OUT/bench-meta.json 2>/dev/null; cp $W/bench.log $OUT/bench.txt
  python -m bench.ab_rounds $W/ab --variant "old:$HD" --variant "new:$HD,FOSCAR_PREWAIT_PREFETCH=4" \
    --order "old new new old" --point 2x8x32768 --point 2x32x8192 --point 2x8x32768:lognormal \
    --limit-s $(( $(left) - 10 )) --round-s 12 > $W/ab_rounds.log 2>&1
  echo "A: ab_rounds rc=$? left=$(left)"; tail -20 $W/ab_rounds.log
else
  python -m bench.ab_rounds $W/ab --variant "old:$HD" --variant "new:$HD" --run-env old:FOSCAR_LONG_CHUNKS=0 \
    --order "old new new old" --point 2x1x196608:paged:h8-1 --point 2x2x196608:paged:h8-1 \
    --point 4x2x196608:paged:h8-1 --limit-s $(( $(left) / 2 )) --round-s 10 > $W/ab_rounds.log 2>&1
  echo "P2: ab_rounds rc=$? left=$(left)"; tail -20 $W/ab_rounds.log
  python -m bench.ab_rounds $W/abl --variant "old:$HD" --variant "new:$HD" --run-env new:FOSCAR_LONG_CHUNK_PROGRAMS=2 \
    --order "old new new old" --point 2x2x524288:paged:h8-1 --point 2x2x524288:h8-1 --point 4x2x524288:paged:h8-1 \
    --point 2x2x524288:h16-2 --limit-s $(( $(left) - 10 )) --round-s 10 > $W/abl_rounds.log 2>&1
  echo "L: ab_rounds rc=$? left=$(left)"; tail -20 $W/abl_rounds.log
  cp $W/abl_rounds.log $OUT/abl_rounds.txt
fi
cp $W/ab_rounds.log $OUT/ab_rounds.txt
probe_end s63c1

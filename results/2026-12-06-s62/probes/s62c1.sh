#!/usr/bin/env bash
# Session 62, call 1: session 61's s61c2.sh (never run), unchanged in substance; its expectations stand, written
# before. Run from the repository root through scripts/gpu_offline.sh (carry .offline), at most LIMIT (default 540) s.
# A head_dim-128 build (FOSCAR_ONLY_HEAD_DIM=128: the same kernels as the default build there), then
# T (either GPU): the long-chunk GPU tests again, on commit 64dffd6's plans (a batch of one's fixed plan keeps 4096 at
#   two KV heads). Expected: all pass. Then
# on an H200: session 60's s60c1.sh unchanged in substance (its header's expectations, written in session 60, stand):
#   B: issue 12's open target, `foscar bench` INT2 BF16 operands, FOSCAR's CUDA kernel only, batches 8 / 32 / 64 x
#      contexts 8K / 32K / 128K with read floors. Expected 4-5 of the 8 points of batch x context >= 256K at 85%
#      (8 x 32K 79-82%, 32 x 8K 80-85%, 64 x 8K 80-86%, 64 x 32K 82-88%, the 128K points and 32 x 32K 86-97%).
#   A: the prefetch A/B (default / FOSCAR_PREWAIT_PREFETCH=4) at INT2 8 x 32K, 32 x 8K, 8 x 32K lognormal. Expected
#      new / old 0.96-0.98, 0.97-0.99, 0.85-0.92; outputs bit-identical.
# on an H100 (issue 12's target is the H200's): P, what call 1's A/B of session 61's long chunks (bench/NOTES.md §106)
#   left untimed: paged caches (page 16) and a capacity between 128K and 256K. old (FOSCAR_LONG_CHUNKS=0: at batch 1
#   the plans before session 60 too) / new (default), rounds old new new old, 8 query heads over 1 KV head.
#   Expected new / old (written before): INT2 one 512K among seven 4K paged 0.60-0.75; INT2 2 x 512K paged 0.70-0.80;
#   INT4 2 x 512K paged 0.70-0.85; INT2 1 x 192K (48 chunks instead of 32) 0.80-0.92; INT2 2 x 192K (48 a sequence
#   instead of 32) 0.80-0.92; the same output bits nowhere but where the chunks are the same.
#   Then, in what is left, Q: session 60's s60c2.sh part A2, never run (short chunks, §103, at the Qwen3-8B shape where
#   the plan changes): old (FOSCAR_SHORT_CHUNKS=0) / new, rounds old new new old, INT2 2 / 3 / 4 x 1K, INT4 2 x 1K,
#   INT2 2 lognormal in 4K. Its expectations (written in session 60): new / old 0.85-0.98 at the four uniform points,
#   the lognormal point 0.95-1.02.
LIMIT="${LIMIT:-540}"
. scripts/probe_preamble.sh /tmp/s62c1  # T0, LIMIT, left(), gpu.csv, commit.txt, W, probe_end
HD="FOSCAR_ONLY_HEAD_DIM=128"
FOSCAR_NVCC_DEFINES="$HD" MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' \
  > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
FOSCAR_NVCC_DEFINES="$HD" timeout 90 python -m pytest -m gpu -n 4 -v -rfE --tb=short -p no:cacheprovider \
  tests/test_ragged_gpu.py -k "past_batch_one or long_sequence_alone" > $W/pytest-t.log 2>&1
echo "T: pytest rc=$? left=$(left): $(tail -1 $W/pytest-t.log)"; grep -E 'FAILED|ERROR' $W/pytest-t.log | head -20
cp $W/pytest-t.log $OUT/pytest-t.txt
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  FOSCAR_NVCC_DEFINES="$HD" timeout $(( $(left) - 150 )) foscar bench --arch h200 --bits 2 --operand bf16 \
    --kernel foscar-cuda --grid sweep --batch 8 --batch 32 --batch 64 --context 8192 --context 32768 \
    --context 131072 --read-floor --out $W/bench --format quiet > $W/bench.log 2>&1
  echo "B: bench rc=$? left=$(left)"; tail -5 $W/bench.log
  python - <<'PY' 2>&1 | tee $W/bench-table.txt
import pandas as pd
d = pd.read_csv("/tmp/s62c1/bench/results.csv")
d = d[d.kernel == "foscar-cuda"]
cols = ["bits", "batch", "context", "median_us", "p20_us", "p80_us", "tbps", "sol_fraction", "floor_fraction",
        "max_rel_err", "sm_clock_before_mhz", "sm_clock_after_mhz", "clock_events_after", "status"]
print(d[[c for c in cols if c in d]].to_string(index=False))
PY
  cp $W/bench-table.txt $OUT/bench-table.txt; cp $W/bench/results.csv $OUT/bench-results.csv 2>/dev/null
  python -m bench.ab_rounds $W/ab --variant "old:$HD" --variant "new:$HD,FOSCAR_PREWAIT_PREFETCH=4" \
    --order "old new new old" --point 2x8x32768 --point 2x32x8192 --point 2x8x32768:lognormal \
    --limit-s $(( $(left) - 10 )) --round-s 12 > $W/ab_rounds.log 2>&1
  echo "A: ab_rounds rc=$? left=$(left)"; tail -20 $W/ab_rounds.log
else
  python -m bench.ab_rounds $W/ab --variant "old:$HD" --variant "new:$HD" --run-env old:FOSCAR_LONG_CHUNKS=0 \
    --order "old new new old" --point 2x8x524288:one-long:paged:h8-1 --point 2x2x524288:paged:h8-1 \
    --point 4x2x524288:paged:h8-1 --point 2x1x196608:h8-1 --point 2x2x196608:h8-1 \
    --limit-s $(( $(left) - 10 )) --round-s 10 > $W/ab_rounds.log 2>&1
  echo "P: ab_rounds rc=$? left=$(left)"; tail -20 $W/ab_rounds.log
  cp $W/ab_rounds.log $OUT/ab_rounds.txt
  python -m bench.ab_rounds $W/abq --variant "old:$HD" --variant "new:$HD" --run-env old:FOSCAR_SHORT_CHUNKS=0 \
    --order "old new new old" --point 2x2x1024 --point 2x3x1024 --point 2x4x1024 --point 4x2x1024 \
    --point 2x2x4096:lognormal --limit-s $(( $(left) - 10 )) --round-s 8 > $W/abq_rounds.log 2>&1
  echo "Q: ab_rounds rc=$? left=$(left)"; tail -20 $W/abq_rounds.log
  cp $W/abq_rounds.log $OUT/abq_rounds.txt
fi
cp $W/ab_rounds.log $OUT/ab_rounds.txt
probe_end s62c1

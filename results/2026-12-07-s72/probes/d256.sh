#!/usr/bin/env bash
# Session 72: sourced by s72c2.sh (or a later call) after probe_preamble.sh and the build, on an H100.
# (Call 1 ran session 71's wide.sh; its status part, issue 12's bench, waits for an H200.) After call 1's C
# (head_dim 256: the merge kernel 0.54 / 0.77 / 0.97 of the in-kernel merge's time at h8-1 1 x 8K / h16-4 1 x 8K /
# h16-4 4 x 8K), decode_cuda.merge_kernel_preferred drops its head_dim cap: gqa x head_dim >= 1024 (gqa 4-8 at 256)
# and batch x num_kv_heads <= 16. R: rounds new old old new (old: FOSCAR_MERGE_WIDE=0), INT2 G=128 unless said.
# Expected new / old (written before the run): h8-1:d256 1 x 8K 0.50-0.60; h16-4:d256 1 x 8K 0.72-0.82;
# h16-4:d256 4 x 8K (16 pairs) 0.94-0.99; h32-8:d256 2 x 8K (16 pairs, gqa 4, untimed) 0.92-1.00; h8-1:d256 16 x 8K
# 0.90-1.00; INT4 h8-1:d256 1 x 4K 0.65-0.85; FP8 operands h8-1:d256 1 x 8K 0.55-0.75; per-value h8-1:d256 1 x 8K
# 0.50-0.70; paged one-long h8-1:d256 8 x 16K (8 pairs) 0.85-1.00; controls outside the rule (h32-8:d256 4 x 8K,
# 32 pairs; h16-8:d256 1 x 8K, gqa 2): 0.98-1.02.
# T: test_fused_merge_gpu whole (its wide-merge test gained head_dim 256 cases), then the rest of the GPU suite but
# test_ragged_gpu (call 1 ran it) with the time left (-n 3).
python -m bench.ab_rounds $W/ab --variant "old:" --variant "new:" --run-env old:FOSCAR_MERGE_WIDE=0 \
  --order "new old old new" --point 2x1x8192:h8-1:d256 --point 2x1x8192:h16-4:d256 --point 2x4x8192:h16-4:d256 \
  --point 2x2x8192:h32-8:d256 --point 2x16x8192:h8-1:d256 --point 4x1x4096:h8-1:d256 \
  --point 2x1x8192:h8-1:d256:fp8 --point 2x1x8192:h8-1:d256:per-value --point 2x8x16384:one-long:paged:h8-1:d256 \
  --point 2x4x8192:h32-8:d256 --point 2x1x8192:h16-8:d256 \
  --limit-s 150 --round-s 15 > $W/ab_rounds.log 2>&1
echo "R: ab_rounds rc=$? left=$(left)"; tail -16 $W/ab_rounds.log; cp $W/ab_rounds.log $OUT/ab_rounds.txt
timeout $(( $(left) > 100 ? $(left) - 20 : 60 )) python -m pytest -q -m gpu -n 3 tests/test_fused_merge_gpu.py \
  > $W/tests.log 2>&1
echo "T1: tests rc=$? left=$(left)"; tail -3 $W/tests.log; cp $W/tests.log $OUT/tests.txt
if [ "$(left)" -gt 60 ]; then
  timeout $(( $(left) - 15 )) python -m pytest -q -m gpu -n 3 tests --ignore=tests/test_ragged_gpu.py \
    --ignore=tests/test_fused_merge_gpu.py > $W/tests_rest.log 2>&1
  echo "T2: tests rc=$? left=$(left)"; tail -3 $W/tests_rest.log; cp $W/tests_rest.log $OUT/tests_rest.txt
fi

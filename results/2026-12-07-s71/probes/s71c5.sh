#!/usr/bin/env bash
# Session 71 call 5: the merge kernel's rule narrowed after call 4 (splits' plans untouched): decode_cuda.
# merge_kernel_preferred, gqa x head_dim >= 1024 floats (two passes of the merging CTA) and batch x num_kv_heads <= 16;
# gqa 6 and batch 32-64 at one KV head keep the in-kernel merge (call 4: 1.03 / 1.03 / 1.01 with the merge kernel).
# T: its GPU test (test_few_wide_merges_take_the_merge_kernel) and the merge tests near it. R: rounds new old old new
# (old: FOSCAR_MERGE_WIDE=0). Expected new / old (written before the run): h8-1 1 x 8K 0.78-0.85, 16 x 8K 0.96-1.00,
# h64-8 1 x 8K 0.90-0.96; controls with the same plans now (h8-1 32 x 8K, h24-4 1 x 8K, h64-8 8 x 8K): 0.98-1.02.
LIMIT="${LIMIT:-300}"
. scripts/probe_preamble.sh /tmp/s71
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
timeout $(( $(left) > 160 ? $(left) - 90 : 40 )) python -m pytest -q -m gpu -n 3 tests/test_fused_merge_gpu.py \
  tests/test_plan.py -k "wide or agree or one_shot or captured" > $W/tests.log 2>&1
echo "T: tests rc=$? left=$(left)"; tail -3 $W/tests.log; cp $W/tests.log $OUT/tests.txt
python -m bench.ab_rounds $W/ab --variant "new:" --variant "old:" --run-env old:FOSCAR_MERGE_WIDE=0 \
  --order "new old old new" --point 2x1x8192:h8-1 --point 2x16x8192:h8-1 --point 2x1x8192:h64-8 \
  --point 2x32x8192:h8-1 --point 2x1x8192:h24-4 --point 2x8x8192:h64-8 \
  --limit-s $(( $(left) > 60 ? $(left) - 10 : 40 )) --round-s 8 > $W/ab_rounds.log 2>&1
echo "R: ab_rounds rc=$? left=$(left)"; tail -12 $W/ab_rounds.log; cp $W/ab_rounds.log $OUT/ab_rounds.txt
probe_end s71c5

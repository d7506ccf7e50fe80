#!/usr/bin/env bash
# Prepared in session 71 (not run in it): what session 71 left untimed, on an H100. Sourced by a dispatcher after
# probe_preamble.sh (any work folder W) and the build. Expectations written in session 71 before any run (guesses from
# bench/NOTES.md §115-§116, ranges wide where no neighbour was timed); INT2, head_dim 128, G=128 unless said.
#   A: the merge kernel's rule (decode_cuda.merge_kernel_preferred) against FOSCAR_MERGE_WIDE=0, rounds new old old
#      new; new / old: h8-1 per-value 1 x 8K 0.85-0.95; FP8 operands 1 x 4K 0.80-0.95; INT4 1 x 4K 0.80-0.92;
#      h8-1 12 x 8K (12 pairs, inside) 0.95-1.01; h16-2 2 x 8K (4 pairs) 0.90-0.98; controls outside the rule
#      (h8-1 24 x 8K, h32-8 2 x 8K): 0.98-1.02.
#   B: the floor of 256 in caches of at most 16K (session 70) against FOSCAR_LONG_CHUNK_SHORT=0 where it was never
#      timed, rounds new off off new; new / off: h8-1 FP8 operands 1 x 16K 0.70-0.85; per-value 1 x 16K 0.70-0.88;
#      paged lognormal 8 x 16K 0.90-1.00; paged one-long 8 x 16K (one 16K among seven 4K) 0.80-0.97; control
#      8 x 12K (16 chunks either way, the merge kernel either way) 0.98-1.02.
#   C: head_dim 256, where merge_kernel_preferred keeps the in-kernel merge because it was never timed (gqa 4-8 take
#      two to four passes there), against FOSCAR_MERGE=kernel (bench.ab's :dN suffix, added in session 71), rounds
#      new k k new; k / new: h8-1:d256 1 x 8K (four passes) 0.70-0.90; h16-4:d256 1 x 8K (gqa 4, two passes) 0.80-0.95;
#      h16-4:d256 4 x 8K (16 pairs) 0.90-1.00; h32-8:d256 8 x 8K (64 pairs) 0.98-1.06; h16-8:d256 1 x 8K (gqa 2,
#      one pass) 1.00-1.06.
#   T: last, with the time left: the fused-merge and ragged GPU tests whole (-n 3; four workers ran out of memory in
#      session 70; 238 tests took 131 s at -n 4 then).
# Each table prints LABEL / BASE with the first variant the base: A new / old, B new / off, C k / new, as written above.
# Runs on either GPU (132 SMs both); the expectations are an H100's.
python -m bench.ab_rounds $W/aba --variant "old:" --variant "new:" --run-env old:FOSCAR_MERGE_WIDE=0 \
  --order "new old old new" --point 2x1x8192:h8-1:per-value --point 2x1x4096:h8-1:fp8 --point 4x1x4096:h8-1 \
  --point 2x12x8192:h8-1 --point 2x2x8192:h16-2 --point 2x24x8192:h8-1 --point 2x2x8192 \
  --limit-s 110 --round-s 15 > $W/ab_wide.log 2>&1
echo "A: ab_rounds rc=$? left=$(left)"; tail -14 $W/ab_wide.log; cp $W/ab_wide.log $OUT/ab_wide.txt
python -m bench.ab_rounds $W/abb --variant "off:" --variant "new:" --run-env off:FOSCAR_LONG_CHUNK_SHORT=0 \
  --order "new off off new" --point 2x1x16384:h8-1:fp8 --point 2x1x16384:h8-1:per-value \
  --point 2x8x16384:lognormal:paged:h8-1 --point 2x8x16384:one-long:paged:h8-1 --point 2x8x12288:h8-1 \
  --limit-s 90 --round-s 12 > $W/ab_short.log 2>&1
echo "B: ab_rounds rc=$? left=$(left)"; tail -12 $W/ab_short.log; cp $W/ab_short.log $OUT/ab_short.txt
python -m bench.ab_rounds $W/abc --variant "new:" --variant "k:" --run-env k:FOSCAR_MERGE=kernel \
  --order "new k k new" --point 2x1x8192:h8-1:d256 --point 2x1x8192:h16-4:d256 --point 2x4x8192:h16-4:d256 \
  --point 2x8x8192:h32-8:d256 --point 2x1x8192:h16-8:d256 \
  --limit-s 90 --round-s 10 > $W/ab_d256.log 2>&1
echo "C: ab_rounds rc=$? left=$(left)"; tail -10 $W/ab_d256.log; cp $W/ab_d256.log $OUT/ab_d256.txt
if [ "$(left)" -gt 40 ]; then
  timeout $(( $(left) - 15 )) python -m pytest -q -m gpu -n 3 tests/test_fused_merge_gpu.py tests/test_ragged_gpu.py \
    > $W/tests.log 2>&1
  echo "T: tests rc=$? left=$(left)"; tail -3 $W/tests.log; cp $W/tests.log $OUT/tests.txt
fi

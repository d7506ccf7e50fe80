#!/usr/bin/env bash
# Prepared in session 70 (not run in it): two plan rules made defaults after session 70's calls, each against its A/B
# setting (bench/NOTES.md §115). Sourced by a dispatcher after probe_preamble.sh (W=/tmp/s69) and the build.
#   1. The long chunks' floor of 256 in caches of at most 16K tokens (splits.long_chunk_floor) against
#      FOSCAR_LONG_CHUNK_SHORT=0 (512 at every capacity): variant "off".
#   2. ceil(capacity / floor) long chunks (plan_work's long_ceil) against FOSCAR_LONG_CHUNK_CEIL=0 (capacity // floor,
#      which the kernel's 256-token alignment cut in chunks of twice the floor off a multiple of it): variant "floor".
#   T: test_a_16k_cache_takes_long_chunks_of_256 and test_the_32_chunk_floor_is_the_host_mirror (never run), the other
#      long-chunk GPU tests, the host mirror and the fused-merge tests of more than 32 chunks.
#   R: rounds new off floor floor off new (new: the defaults). Expected (written in session 70 before any run), INT2 at
#      8 query heads over 1 KV head unless said. The 16K rows of new / off are the plans that call 3 timed at
#      FOSCAR_LONG_CHUNK_TOKENS=256 against 512 (0.70 / 0.78 / 0.79 / 0.91 / 0.87 there):
#      new / off: 1 x 16K 0.66-0.76; paged 1 x 16K 0.73-0.84; INT4 1 x 16K 0.74-0.85; 2 x 16K 0.86-0.95;
#        16 query heads over 2 KV heads 1 x 16K 0.82-0.93; 1 x 12K (48 chunks of 256 against 24 of 512) 0.65-0.90;
#        1 x 16000 (63 of 256 against 32 of 512) 0.66-0.80; controls past 16K or with the same plans (1 x 8K,
#        1 x 24K, 8 x 16K, 1 x 20000, 1 x 30000, 1 x 100000): 0.98-1.02.
#      new / floor: 1 x 16000 (63 chunks of 256 against 32 of 512) 0.66-0.80; 1 x 20000 (40 of 512 against 27 of 768)
#        0.80-0.92; INT4 1 x 20000 0.80-0.95; 1 x 30000 (59 of 512 against 40 of 768) 0.85-0.97; controls on a
#        multiple of the floor or at the slots' bound (1 x 16K, 1 x 24K, 1 x 8K, 8 x 16K, 1 x 100000): 0.98-1.02.
timeout 280 python -m pytest -q -m gpu -n 3 tests/test_ragged_gpu.py tests/test_fused_merge_gpu.py \
  -k "16k or long_chunk_floor or more_than_32 or past_batch_one or host_mirror or past_32_chunks or alone_merges" \
  > $W/tests.log 2>&1
echo "T: tests rc=$? left=$(left)"; tail -3 $W/tests.log; cp $W/tests.log $OUT/tests.txt
python -m bench.ab_rounds $W/ab --variant "new:" --variant "off:" --variant "floor:" \
  --run-env off:FOSCAR_LONG_CHUNK_SHORT=0 --run-env floor:FOSCAR_LONG_CHUNK_CEIL=0 \
  --order "new off floor floor off new" --point 2x1x16384:h8-1 --point 2x1x16384:paged:h8-1 --point 4x1x16384:h8-1 \
  --point 2x2x16384:h8-1 --point 2x1x16384:h16-2 --point 2x1x12288:h8-1 --point 2x1x16000:h8-1 \
  --point 2x1x20000:h8-1 --point 4x1x20000:h8-1 --point 2x1x30000:h8-1 --point 2x1x100000:h8-1 \
  --point 2x1x8192:h8-1 --point 2x1x24576:h8-1 --point 2x8x16384:h8-1 \
  --limit-s $(( $(left) > 120 ? $(left) - 25 : 60 )) --round-s 12 > $W/ab_rounds.log 2>&1
echo "R: ab_rounds rc=$? left=$(left)"; tail -34 $W/ab_rounds.log; cp $W/ab_rounds.log $OUT/ab_rounds.txt

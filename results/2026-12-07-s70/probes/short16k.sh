#!/usr/bin/env bash
# Prepared in session 70 (not run in it): the long chunks' floor of 256 in caches of at most 16K tokens
# (splits.long_chunk_floor, FOSCAR_LONG_CHUNK_SHORT, on by default since the commit after a3b67f9; bench/NOTES.md §115)
# against its A/B off (FOSCAR_LONG_CHUNK_SHORT=0: 512 at every capacity). Sourced by a dispatcher after
# probe_preamble.sh (W=/tmp/s69) and the build.
#   T: test_a_16k_cache_takes_long_chunks_of_256 (never run), the other long-chunk GPU tests and the host mirror.
#   R: rounds new off off new (new: the default; off: FOSCAR_LONG_CHUNK_SHORT=0). Expected (written in session 70
#      before any run), new / off, INT2 at 8 query heads over 1 KV head unless said; the 16K rows are the plans that
#      call 3 timed at FOSCAR_LONG_CHUNK_TOKENS=256 against 512 (0.70 / 0.78 / 0.79 / 0.91 / 0.87 there):
#      1 x 16K 0.66-0.76; paged 1 x 16K 0.73-0.84; INT4 1 x 16K 0.74-0.85; 2 x 16K 0.86-0.95;
#      16 query heads over 2 KV heads 1 x 16K 0.82-0.93; 1 x 12K (48 chunks of 256 against 24 of 512, never timed)
#      0.65-0.90; lognormal 8 x 16K 0.93-1.02; controls with the same plans (1 x 8K, 1 x 24K, 8 x 16K): 0.98-1.02.
timeout 200 python -m pytest -q -m gpu -n 4 tests/test_ragged_gpu.py \
  -k "16k or long_chunk_floor or more_than_32 or past_batch_one or host_mirror" \
  > $W/tests.log 2>&1
echo "T: tests rc=$? left=$(left)"; tail -3 $W/tests.log; cp $W/tests.log $OUT/tests.txt
python -m bench.ab_rounds $W/ab --variant "new:" --variant "off:" --run-env off:FOSCAR_LONG_CHUNK_SHORT=0 \
  --order "new off off new" --point 2x1x16384:h8-1 --point 2x1x16384:paged:h8-1 --point 4x1x16384:h8-1 \
  --point 2x2x16384:h8-1 --point 2x1x16384:h16-2 --point 2x1x12288:h8-1 --point 2x8x16384:lognormal:h8-1 \
  --point 2x1x8192:h8-1 --point 2x1x24576:h8-1 --point 2x8x16384:h8-1 \
  --limit-s $(( $(left) > 120 ? $(left) - 25 : 60 )) --round-s 12 > $W/ab_rounds.log 2>&1
echo "R: ab_rounds rc=$? left=$(left)"; tail -30 $W/ab_rounds.log; cp $W/ab_rounds.log $OUT/ab_rounds.txt

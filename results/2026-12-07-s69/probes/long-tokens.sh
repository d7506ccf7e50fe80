#!/usr/bin/env bash
# Prepared in session 69 (not run in it): the long chunk's 4096 against 2048 and 1024 (FOSCAR_LONG_CHUNK_TOKENS, a plan
# setting read when a plan is made; bench/NOTES.md §114). Sourced by a dispatcher after probe_preamble.sh and the build.
# Why: session 69's bench at the Llama-3.1-70B TP8 shape (8 query heads over 1 KV head, an H100) timed INT2 1 x 128K at
# 20.1 us, 1.85x FlashInfer BF16, where 1 x 512K takes 22.5 us: 128K runs on 32 CTAs of 4096 tokens (the floor fit in
# sessions 57-60 while one CTA merged a sequence's chunks past 32 in rounds of 16: 1 x 128K 19.5 / 18.6 / 23.2 us at
# 32 / 64 / 128 chunks, §101), and since session 66 the merge kernel takes those chunks (1 x 512K 25.0 -> 22.5, §111).
#   T: the GPU tests of test_ragged_gpu.py (the new one at FOSCAR_LONG_CHUNK_TOKENS=1024 among them).
#   R: rounds old k2 k1 k05 k05 k1 k2 old (old: the default 4096; k2: 2048; k1: 1024; k05: 512). Expected (written in
#      session 69 before any run), k / old, INT2 at 8 query heads over 1 KV head unless said (k05 as k1 where its plan
#      is k1's: every point but 1 x 32K, 1 x 64K and lognormal 8 x 32K):
#      1 x 128K (20.1 us; k2 64 chunks of 2048, k1 128 of 1024): k2 0.70-0.85, k1 0.55-0.75;
#      INT4 1 x 128K (21.5 us): k2 0.75-0.90, k1 0.60-0.80;
#      paged 1 x 128K: as contiguous within 0.05;
#      2 x 128K (64 -> 128 slots; k2 and k1 both 64 chunks a sequence): 0.70-0.90 each;
#      one 128K among seven 4K (20.3 us; k1 103 chunks of 1280, k2 64 of 2048, old 32 of 4096): k2 0.70-0.90,
#      k1 0.55-0.80;
#      1 x 64K (k1 64 chunks of 1024, k2 32 of 2048 as old, k05 128 of 512): k2 0.98-1.02, k1 0.80-0.97,
#      k05 0.75-1.00;
#      1 x 32K (9.99 us; 32 chunks of 1024 in all but k05, 64 of 512 there): k05 0.85-1.10 (a merge-kernel launch
#      in place of the in-kernel merge);
#      16 query heads over 2 KV heads 1 x 128K (32 -> 64 chunks with k2 and k1): 0.70-0.90;
#      lognormal 8 x 32K (seed 0's lengths; old, k2 and k1 the same 60 CTAs; k05 90, the longest in 33 chunks of 512,
#      so the merge kernel in place of the in-kernel merge): k05 0.85-1.05;
#      controls with the same plan as old, 0.98-1.02: 1 x 32K (k2, k1), 1 x 512K (all), lognormal 8 x 32K (k2, k1).
#      max_rel_err the same (<= 2e-3); outputs differ where the chunks do.
timeout 150 python -m pytest -q -m gpu -n 4 tests/test_ragged_gpu.py > $W/tests.log 2>&1
echo "T: tests rc=$? left=$(left)"; tail -3 $W/tests.log; cp $W/tests.log $OUT/tests.txt
python -m bench.ab_rounds $W/ab --variant "old:" --variant "k2:" --variant "k1:" --variant "k05:" \
  --run-env k2:FOSCAR_LONG_CHUNK_TOKENS=2048 --run-env k1:FOSCAR_LONG_CHUNK_TOKENS=1024 \
  --run-env k05:FOSCAR_LONG_CHUNK_TOKENS=512 --order "old k2 k1 k05 k05 k1 k2 old" --point 2x1x131072:h8-1 --point 4x1x131072:h8-1 --point 2x1x131072:paged:h8-1 \
  --point 2x2x131072:h8-1 --point 2x8x131072:one-long:h8-1 --point 2x1x65536:h8-1 --point 2x1x131072:h16-2 \
  --point 2x1x32768:h8-1 --point 2x1x524288:h8-1 --point 2x8x32768:lognormal:h8-1 \
  --limit-s $(( $(left) > 120 ? $(left) - 25 : 60 )) --round-s 15 > $W/ab_rounds.log 2>&1
echo "R: ab_rounds rc=$? left=$(left)"; tail -40 $W/ab_rounds.log; cp $W/ab_rounds.log $OUT/ab_rounds.txt

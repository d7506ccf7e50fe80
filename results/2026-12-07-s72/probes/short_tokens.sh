#!/usr/bin/env bash
# Prepared in session 72 (not run in it: no device time left): FOSCAR_SHORT_TOKENS=1 (splits.plan_short_tokens,
# Params::short_tokens; bench/NOTES.md §117, DESIGN "Short chunks from the lengths"), never run on a GPU. Sourced by a
# dispatcher after probe_preamble.sh and the build, on an H100 (132 SMs; an H200 has 132 too).
#   T: its GPU test (test_ragged_gpu -k short_tokens: counts against splits.schedule and the merge kernel's table,
#      the fp64 reference, three merges), then the ragged and fused-merge files whole with the time left at the end.
#   A: rounds off on on off (off: the default), INT2 G=128 head_dim 128 unless said; expected on / off (written
#      before any run; session 71's Llama bench: the capacity point 8 x 4K in 128K 8.51 us, the same lengths in a
#      4K cache 7.68, INT4 8.95 / 8.40):
#      h8-1 8 x 4K in a 128K cache (64 -> 128 CTAs) 0.85-0.95; INT4 the same 0.88-0.97; h8-1 16 x 2K in 128K 0.85-0.97;
#      h8-1 32 x 1K in 128K (32 pairs, the in-kernel merge) 0.85-1.00; h16-2 4 x 4K in 64K (bound 16896) 0.85-0.97;
#      h8-1 8 x 4K paged in 128K (the bench's paged copy keeps the capacity as its max_seq_len) 0.85-0.97 (host
#      mirror: 64 -> 128 CTAs at each of these); controls with the same plans (Qwen3-8B 8 x 4K in 128K: the bound is
#      4096 tokens; h8-1 lognormal 8 x 32K: 43917 tokens, 90 CTAs either way) 0.98-1.02; and h8-1 8 x 4K in a 4K cache
#      (128 CTAs either way): 0.98-1.02, its time within 0.97-1.05 of the 128K point's "on"; h8-1 64 x 512 in 4K
#      (64 -> 128 CTAs) 0.85-1.00; the bound's worst case, h8-1 128 x 257 in 4K (128 CTAs of 257 -> 256 CTAs of 256
#      and 1 token; added after a review) 0.95-1.15: it may lose.
#   TL: the timeline of the Llama shape's small batches (s72c3.sh's, which never ran; its expectations in its header).
timeout $(( $(left) > 300 ? 150 : 60 )) python -m pytest -q -m gpu -n 2 tests/test_ragged_gpu.py -k short_tokens \
  > $W/tests_short.log 2>&1
echo "T: tests rc=$? left=$(left)"; tail -3 $W/tests_short.log; cp $W/tests_short.log $OUT/tests_short.txt
python -m bench.ab_rounds $W/ab --variant "off:" --variant "on:" --run-env on:FOSCAR_SHORT_TOKENS=1 \
  --order "off on on off" --point 2x8x4096:h8-1:cap131072 --point 4x8x4096:h8-1:cap131072 \
  --point 2x16x2048:h8-1:cap131072 --point 2x32x1024:h8-1:cap131072 --point 2x4x4096:h16-2:cap65536 \
  --point 2x8x4096:h8-1:cap131072:paged --point 2x8x4096:cap131072 --point 2x8x32768:lognormal:h8-1 \
  --point 2x8x4096:h8-1 --point 2x64x512:h8-1:cap4096 --point 2x128x257:h8-1:cap4096 \
  --limit-s 170 --round-s 15 > $W/ab_short_tokens.log 2>&1
echo "A: ab_rounds rc=$? left=$(left)"; tail -16 $W/ab_short_tokens.log; cp $W/ab_short_tokens.log $OUT/ab_short_tokens.txt
if [ "$(left)" -gt 150 ]; then
  timeout $(( $(left) - 60 )) python -m bench.timeline --point 2x1x8192:h8-1 --point 2x8x4096:h8-1 \
    --point 2x8x8192:h8-1 --point 2x1x32768:h8-1 --point 2x1x8192:h32-8 --save $W/tl > $W/timeline.log 2>&1
  echo "TL: timeline rc=$? left=$(left)"; tail -40 $W/timeline.log; cp $W/timeline.log $OUT/timeline.txt
fi
if [ "$(left)" -gt 60 ]; then
  timeout $(( $(left) - 15 )) python -m pytest -q -m gpu -n 3 tests/test_ragged_gpu.py tests/test_fused_merge_gpu.py \
    > $W/tests.log 2>&1
  echo "T2: tests rc=$? left=$(left)"; tail -3 $W/tests.log; cp $W/tests.log $OUT/tests.txt
fi

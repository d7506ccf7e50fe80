#!/usr/bin/env bash
# Session 72 call 3 (the device time left, ~370 s): where the Llama-3.1-70B TP8 shape's small batches spend their time
# (bench/NOTES.md §116-§117: INT2 1 x 8K 1.84x, 8 x 4K 1.71x, 8 x 8K 2.12x, 1 x 32K 2.45x FlashInfer BF16 at its best).
# `python -m bench.timeline` (the profiling build, FOSCAR_TIMELINE=1; 8 graph-replayed calls a point, medians over the
# working CTAs), 8 query heads over 1 KV head, INT2 G=128 head_dim 128, the default plans (the merge kernel at all four
# by session 71's rule), and the Qwen3-8B shape's 1 x 8K beside them. A reading, not a test; what I expect to see
# (written before the run, from §80 and §111's timelines): at 1 x 8K (32 CTAs of one 256-token iteration) find_work
# 0.3-0.6 us, to_loop 0.4-1.0, loop 1.5-2.5, epilogue 0.5-0.9, span 3.5-4.5, gap (launches + merge kernel) 1.5-2.5;
# at 8 x 4K (128 CTAs of one iteration) the same per CTA but span 4.5-5.5 (the loop waits on 4x the bytes in flight);
# at 1 x 32K (64 chunks of 512, two iterations) loop 3-4.5. The records are saved (--save) for reading anywhere.
LIMIT="${LIMIT:-280}"
. scripts/probe_preamble.sh /tmp/s72t
timeout $(( $(left) - 10 )) python -m bench.timeline --point 2x1x8192:h8-1 --point 2x8x4096:h8-1 \
  --point 2x8x8192:h8-1 --point 2x1x32768:h8-1 --point 2x1x8192:h32-8 --save $W/tl > $W/timeline.log 2>&1
echo "TL: timeline rc=$? left=$(left)"; tail -60 $W/timeline.log; cp $W/timeline.log $OUT/timeline.txt
probe_end s72c3

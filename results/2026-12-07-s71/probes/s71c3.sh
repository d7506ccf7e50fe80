#!/usr/bin/env bash
# Session 71 call 3: the in-kernel (fused) merge against the merge kernel (FOSCAR_MERGE=kernel) at the Llama-3.1-70B
# TP8 shape's small points. Why: call 1 timed INT2 1 x 8K at 8 query heads over 1 KV head at 6.73 us (32 chunks of
# 256, merged on the sequence's last CTA) and 1 x 16K at 5.73 us (64 chunks of 256, merged by the merge kernel): twice
# the tokens in less time, with the same one-iteration CTAs. Guess: the last CTA reads 32 chunks x 8 query heads x
# 512 B = 128 KB of partials from L2 alone (~1 us at ~64 B a cycle an SM), where the merge kernel spreads them over
# the GPU after one PDL wait. At the Qwen3-8B shape (gqa 4, 16 chunks at 1 x 8K) a merging CTA reads a quarter of
# that, and there the fused merge measured level or 5-9% faster (NOTES §79-§81).
# Rounds f k k f f k (f: the defaults; k: FOSCAR_MERGE=kernel). Expected k / f (written before the run), INT2 unless
# said, plans from splits.plan_work on 132 SMs:
#   h8-1 1 x 8K (32 chunks, fixed) 0.80-0.92; INT4 1 x 8K 0.85-0.95; paged 1 x 8K 0.82-0.95;
#   h16-2 1 x 8K (32 chunks, 2 merging CTAs) 0.82-0.95; h8-1 2 x 8K (32 each) 0.82-0.95; 4 x 8K (32 each) 0.85-0.97;
#   8 x 4K (16 each, 64 KB a merging CTA) 0.90-1.00; 8 x 8K (16 each) 0.92-1.02; 1 x 4K (16, fixed) 0.90-1.00;
#   h8-1 FP8 operands 1 x 8K 0.82-0.95;
#   Qwen3-8B (h32-8): 1 x 8K (16 chunks) 0.97-1.03; 8 x 8K (4 each) 1.00-1.08; 1 x 32K (32, gqa 4) 1.00-1.08;
#   controls that take the merge kernel either way (h8-1 1 x 16K, one 128K among seven 4K): 0.98-1.02.
LIMIT="${LIMIT:-560}"
. scripts/probe_preamble.sh /tmp/s71
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
python -m bench.ab_rounds $W/ab --variant "f:" --variant "k:" --run-env k:FOSCAR_MERGE=kernel --order "f k k f f k" \
  --point 2x1x8192:h8-1 --point 4x1x8192:h8-1 --point 2x1x8192:paged:h8-1 --point 2x1x8192:h16-2 \
  --point 2x2x8192:h8-1 --point 2x4x8192:h8-1 --point 2x8x4096:h8-1 --point 2x8x8192:h8-1 --point 2x1x4096:h8-1 \
  --point 2x1x8192:h8-1:fp8 --point 2x1x8192 --point 2x8x8192 --point 2x1x32768 --point 2x1x16384:h8-1 \
  --point 2x8x131072:one-long:h8-1 \
  --limit-s $(( $(left) > 120 ? $(left) - 25 : 60 )) --round-s 20 > $W/ab_rounds.log 2>&1
echo "R: ab_rounds rc=$? left=$(left)"; tail -40 $W/ab_rounds.log; cp $W/ab_rounds.log $OUT/ab_rounds.txt
probe_end s71c3

#!/usr/bin/env bash
# Session 74 call 1. Replaces next-s74c1.sh (session 73's plan, never run: no machine came in the session's first
# minutes, and by then the fix it was to test for had been written): on an H200, session 69's status.sh (issue 12's
# bench, expectations in its header); on an H100, an A/B of three schedules and the GPU files.
#   A: bench.ab_rounds, rounds off old new new old off. off: FOSCAR_SHORT_TOKENS=0 (the plans before session 73's
#      short-batch cut); old: a FOSCAR_KEEP_SHORT=0 build (session 73's rule: a short batch whose longest sequence is
#      past 512 is cut whole in chunks of 256); new: the default (bench/NOTES.md §119: a sequence of at most 512 tokens
#      stays one chunk). INT2 G=128, 8 query heads over 1 KV head. Host mirror CTAs (sequences merged) off / old /
#      new, and expected ratios, written before the run:
#      one-long (one long sequence, the others of 512 tokens: bench.ab's :s512):
#        64: 1024 + 63 x 512 in 4K: 65 (1) / 130 (64) / 67 (1);  32: 1024 + 31 x 512 in 4K: 33 (1) / 66 (32) / 35 (1);
#        32: 2048 + 31 x 512 in 4K: 35 (1) / 70 (32) / 39 (1);   8: 4096 + 7 x 512 in 128K: 15 (1) / 30 (8) / 23 (1);
#        16: 8192 + 15 x 512 in 128K: 31 (1) / 62 (16) / 47 (1).
#        Session 73 expected old / off 1.15-1.30, 1.10-1.30, 1.05-1.25, 0.95-1.10, 0.95-1.10 (s73c3.sh). Now I
#        expect less: off merges the long sequence anyway, so old's extra merges run beside it (old / off 1.00-1.20).
#        new / off 0.85-0.97 at 4K (the long sequence's last CTA runs one iteration and a merge instead of two and a
#        merge; the 512s run two and no merge, which 64 x 512 measured faster than one and a merge), 0.88-1.00 at
#        128K; new / old 0.85-1.00.
#      lognormal 64 x 1K, 32 x 2K, 16 x 4K, 32 x 1K in 128K: off / old / new 71/88/80, 41/63/52, 33/56/51, 34/41/36
#        CTAs (longest chunk 512 / 256 / 414-486). Session 73 measured old / off 0.905, 0.873, 0.880, 0.948. Expected
#        new / off 0.87-0.97 and new / old 0.97-1.03 (a merged sequence's last CTA, one iteration and a merge, took
#        longer than a whole one of two iterations at 64 x 512; so keeping the 257-512 ones whole should not lengthen
#        the longest CTA).
#      controls: 8 x 4K in 128K (uniform; old = new, 128 CTAs; new / old 0.98-1.02), 64 x 512 in 4K (all 64 CTAs,
#        0.98-1.02).
#   S: test_ragged_gpu.py -k "short_tokens or chunk_cap" (three never-run cases: 1024 + 63 x 512 in 4K, 1024 + 130 x 200
#      and 600 + 129 x 257 in 8K, on the general path).
#   T: the GPU files group by group with the time left (merge_slots and ragged first: they hold the derived ranges).
# At most LIMIT (560) s.
LIMIT="${LIMIT:-560}"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  . scripts/probe_preamble.sh /tmp/s69  # status.sh reads /tmp/s69/bench
  probe_build
  echo "part: status"
  . results/2026-12-07-s69/probes/status.sh
  probe_end s74c1
else
  . scripts/probe_preamble.sh /tmp/s74c1
  probe_build
  python -m bench.ab_rounds $W/ab --variant "off:" --variant "old:FOSCAR_KEEP_SHORT=0" --variant "new:" \
    --run-env off:FOSCAR_SHORT_TOKENS=0 --order "off old new new old off" \
    --point 2x64x1024:one-long:h8-1:cap4096:s512 --point 2x32x1024:one-long:h8-1:cap4096:s512 \
    --point 2x32x2048:one-long:h8-1:cap4096:s512 --point 2x8x4096:one-long:h8-1:cap131072:s512 \
    --point 2x16x8192:one-long:h8-1:cap131072:s512 --point 2x64x1024:lognormal:h8-1:cap131072 \
    --point 2x32x2048:lognormal:h8-1:cap131072 --point 2x16x4096:lognormal:h8-1:cap131072 \
    --point 2x32x1024:lognormal:h8-1:cap131072 --point 2x8x4096:uniform:h8-1:cap131072 \
    --point 2x64x512:uniform:h8-1:cap4096 --limit-s 230 --round-s 25 > $W/ab.log 2>&1
  echo "A: rc=$? left=$(left)"; tail -22 $W/ab.log; cp $W/ab.log $OUT/ab.txt
  timeout $(( $(left) - 10 )) python -m pytest -q -m gpu tests/test_ragged_gpu.py -k "short_tokens or chunk_cap" \
    > $W/short.log 2>&1
  echo "S: rc=$? left=$(left)"; tail -3 $W/short.log
  for group in "tests/test_merge_slots.py tests/test_ragged_gpu.py" "tests/test_paged.py tests/test_plan.py \
tests/test_bad_inputs.py" "tests/test_decode_cuda.py" "tests/test_channel_k.py tests/test_decode_triton.py"; do
    if [ "$(left)" -gt 45 ]; then
      timeout $(( $(left) - 10 )) python -m pytest -q -m gpu -n 4 $group >> $W/tests_rest.log 2>&1
      echo "T: $group rc=$? left=$(left)"; tail -1 $W/tests_rest.log
    fi
  done
  cat $W/short.log $W/tests_rest.log > $OUT/tests.txt
  probe_end s74c1
fi

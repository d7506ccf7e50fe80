#!/usr/bin/env bash
# Prepared in session 80 for a later call (not run; session 80 got no machine): session 80's s80c1b.sh for the page
# check's per-warp form (bench/NOTES.md §125). Any GPU. At most LIMIT (default 540) s. Copy it into the session's
# probes folder and commit before the run.
#   FOSCAR_PAGE_CHECK=1, an A/B build: each warp of a paged CTA reads the page ids of its own sub-tiles before its
#   loop (1 load a lane for each 512 tokens of its share at 16-token pages, __any_sync), and on an id outside
#   0 .. num_pages - 1 reads no token; the epilogue ORs the warps' flags and writes the rows NaN (output and LSE).
#   Session 79's CTA-wide form (__syncthreads_or) spilled up to 44 B; this one at most 28 B (within CI's 32 B).
#   1. Its GPU test (36 cases: -1, num_pages and 2^30 as the sixth or the last page of a 6000-token sequence in
#      chunks or of a 700-token one-chunk sequence; BF16 / FP8 folded and per-value). Expected: all pass.
#   2. Its cost, bench.ab_rounds off / check on five paged points (rounds off check check off). Expected (written
#      before): the ids' loads are 4 B a page against ~1.3 KB of codes and scales (INT2, 16 tokens), but a warp waits
#      for them (one round trip, ~1 us) before its first copy: check / off 1.01-1.03 at the large points (8 x 32K,
#      64 x 8K, INT4 8 x 32K, FP8 operands), up to 1.10 at 1 x 8K (a ~9 us call). Adopt it as the default only within
#      1.01 at the large points; else the next form issues the ring's first copies before the check's loads return.
#   3. The GPU suite (default build, -n 4) with the time left: every test that runs passes.
LIMIT="${LIMIT:-540}"
. scripts/probe_preamble.sh /tmp/pc
export FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_PAGE_CHECK=1"
timeout $(( $(left) - 300 )) python -m pytest -q -m gpu -n 3 tests/test_ragged_gpu.py -k page_check > $W/tests.log 2>&1
echo "T: page check rc=$? left=$(left)"; tail -3 $W/tests.log; cp $W/tests.log $OUT/tests.txt
unset FOSCAR_NVCC_DEFINES
python -m bench.ab_rounds $W/ab --variant "off:FOSCAR_ONLY_HEAD_DIM=128" \
  --variant "check:FOSCAR_ONLY_HEAD_DIM=128,FOSCAR_PAGE_CHECK=1" --order "off check check off" \
  --point 2x8x32768:paged --point 2x64x8192:paged --point 4x8x32768:paged \
  --point 2x8x32768:paged:fp8 --point 2x1x8192:paged \
  --limit-s $(( $(left) - 250 )) --round-s 30 > $W/ab.log 2>&1
echo "A: rc=$? left=$(left)"; tail -20 $W/ab.log; cp $W/ab.log $OUT/ab.txt
probe_build
timeout $(( $(left) - 15 )) python -m pytest -v -m gpu -n 4 --durations=40 tests/ 2>&1 | python -u -c \
  'import sys, time; t = time.time(); [print(f"{time.time() - t:7.1f} {l}", end="", flush=True) for l in sys.stdin]' \
  > $W/suite.log
echo "G: rc=${PIPESTATUS[0]} left=$(left)"; tail -2 $W/suite.log; grep -c "PASSED" $W/suite.log
grep -E "(FAILED|ERROR) " $W/suite.log | head -20; cp $W/suite.log $OUT/suite.txt
probe_end s81c1

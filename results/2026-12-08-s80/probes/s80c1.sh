#!/usr/bin/env bash
# Session 80, call 1: results/2026-12-07-s79/probes/next-s80c1.sh as prepared in session 79, unchanged below its header.
# the page check's first GPU run. Any GPU (H100 or H200; the
# question is the same on both). At most LIMIT (default 540) s. Copy it into the session's probes folder and commit
# before the run.
#   FOSCAR_PAGE_CHECK=1 (bench/NOTES.md §124, an A/B build): a paged CTA reads its chunk's page ids once before its
#   loop (plain loads, 4 a thread in flight, __syncthreads_or), and on an id outside 0 .. num_pages - 1 reads no
#   token and writes NaN rows (output and LSE; the merge keeps them NaN), where the default build reads past the pool
#   (an illegal address that poisons the serving process's CUDA context, or silently wrong numbers).
#   1. Correctness first: its GPU test (18 cases: -1, num_pages and 2^30 as the sixth page of a 6000-token sequence
#      in chunks or of a 700-token one-chunk sequence, BF16 / FP8 folded and per-value; the other rows bit for bit the
#      clean table's, within tolerance of the fp64 reference; the clean table again gives the first answer).
#      Expected: all pass.
#   2. Its cost, bench.ab_rounds off / check on paged points (rounds off check check off).
#      Expected (written before): the ids' extra reads are 4 B a page against ~1.3 KB of codes and scales a page
#      (INT2, 16 tokens; each KV head's CTA reads its chunk's ids), but their latency is not hidden: one round trip
#      (~1 us) for every 4 x 128 ids of a chunk, before the first copy. So check / off 1.01-1.04 at the large points
#      (8 x 32K, 64 x 8K, 8 x 128K, INT4 8 x 32K, FP8 operands; chunks of 512-2048 ids) and up to 1.10 at 1 x 8K and
#      1 x 32K (5-15 us calls, one round trip each). If so, the next form overlaps the check with the ring's first id
#      copies (tried in session 79: it spilled 36 B in one INT4 G=32 instance); adopt a check as the default only
#      within 1.01 at the large points and without new spills.
LIMIT="${LIMIT:-540}"
. scripts/probe_preamble.sh /tmp/pc
export FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_PAGE_CHECK=1"
timeout $(( $(left) - 60 )) python -m pytest -q -m gpu -n 3 tests/test_ragged_gpu.py -k page_check > $W/tests.log 2>&1
echo "T: page check rc=$? left=$(left)"; tail -3 $W/tests.log; cp $W/tests.log $OUT/tests.txt
unset FOSCAR_NVCC_DEFINES
python -m bench.ab_rounds $W/ab --variant "off:FOSCAR_ONLY_HEAD_DIM=128" \
  --variant "check:FOSCAR_ONLY_HEAD_DIM=128,FOSCAR_PAGE_CHECK=1" --order "off check check off" \
  --point 2x8x32768:paged --point 2x64x8192:paged --point 2x8x131072:paged --point 4x8x32768:paged \
  --point 2x8x32768:paged:fp8 --point 2x8x32768:paged:lognormal --point 2x1x32768:paged --point 2x1x8192:paged \
  --limit-s $(( $(left) - 20 )) --round-s 45 > $W/ab.log 2>&1
echo "A: rc=$? left=$(left)"; tail -30 $W/ab.log; cp $W/ab.log $OUT/ab.txt
probe_end s80c1

#!/usr/bin/env bash
# NOT RUN (session 55: written for call 3, which no device was lent for; session 56's s56c1.sh holds it, with a
# paged part added). The prefetch before
# griddepcontrol.wait in its final form (FOSCAR_PREWAIT_PREFETCH=4 with the defaults FOSCAR_PREWAIT_WAVE=1,
# FOSCAR_EARLY_TRIGGER=1: first wave only, the trigger at the start in contiguous token-wise instances with no merge
# kernel after them) against the default kernel, and the decode's GPU tests on a build with it: what it takes to make
# it the default (bench/NOTES.md §99). Run from the repository root through scripts/gpu_offline.sh (carry .offline),
# at most LIMIT (default 560) s:
#   bash results/2026-12-06-s55/probes/s55c3.sh
# Written after call 1 (an H100, call1-h100/: ep4 / t 0.971 at INT2 8 x 32K, 0.878 at 8 x 32K lognormal, 0.998 at
# 64 x 8K where p2 was 1.021) with call 2 (the first-wave bound, s55c2.sh) not lent.
#
# A: variants old (the default build: no prefetch), new (FOSCAR_PREWAIT_PREFETCH=4), n2 (2 steps);
# rounds old new n2 n2 new old old new n2, ten points. B: old / new with --query-copy (a predecessor launched without
# PDL: the decode's CTAs start after it ends, the wait does not wait). C: pytest -m gpu -n 4 over the decode's GPU
# tests on a FOSCAR_PREWAIT_PREFETCH=4 build (FOSCAR_NVCC_DEFINES): test_decode_cuda without its knob compiles,
# fused merge, ragged, plan, merge slots, append, paged.
#
# Expected (written before), on an H200: new / old 0.95-0.98 at INT2 8 x 32K and 32 x 8K, 0.97-1.00 at 32 x 32K,
# 64 x 8K, 64 x 32K and 8 x 128K (no point slower than +0.5%), 1 x 8K 0.96-0.99, lognormal 0.85-0.92, INT4 8 x 32K
# 0.98-1.00, paged 0.99-1.01 (not prefetched, its trigger unchanged); n2 within 1.5% of new; outputs bit-identical to
# old's. On an H100: call 1's ep4 ratios within 1%, 64 x 8K level. B: new / old 1.00-1.02 (the prefetch just ahead of
# the copies, as §94's; what a serving step without PDL before the attention pays). C: every test passes.
. scripts/probe_preamble.sh /tmp/s55  # T0, LIMIT (560), left(), gpu.csv, commit.txt, W, probe_end
HD="FOSCAR_ONLY_HEAD_DIM=128"
OLD="$HD"
NEW="$HD,FOSCAR_PREWAIT_PREFETCH=4"
export FOSCAR_NVCC_DEFINES="FOSCAR_PREWAIT_PREFETCH=4"  # C's build and tests (ab_rounds sets its own per variant)
# C's full build (with the exported FOSCAR_NVCC_DEFINES), beside A's three head_dim-128 builds
[ "${SHORT:-0}" = 1 ] || (MAX_JOBS=6 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build-full.log 2>&1; echo "full build rc=$?" >> $W/build-full.log) &
# SHORT=1 (a call with little device time left): A without n2, rounds old new new old old new, in A_S seconds
V3=(--variant "n2:$HD,FOSCAR_PREWAIT_PREFETCH=2"); ORDER="old new n2 n2 new old old new n2"
[ "${SHORT:-0}" = 1 ] && { V3=(); ORDER="old new new old old new"; }
python -m bench.ab_rounds $W/ab --variant "old:$OLD" --variant "new:$NEW" "${V3[@]}" --order "$ORDER" \
  --point 2x8x32768 --point 2x32x8192 --point 2x64x8192 --point 2x32x32768 --point 2x64x32768 --point 2x8x131072 \
  --point 4x8x32768 --point 2x1x8192 --point 2x8x32768:lognormal --point 2x8x32768:paged \
  --limit-s ${A_S:-$(( $(left) - 230 ))} --round-s 20 > $W/ab_rounds.log 2>&1
echo "A: ab_rounds rc=$? left=$(left)"; tail -45 $W/ab_rounds.log
[ "$(left)" -ge 230 ] && python -m bench.ab_rounds $W/abq --variant "old:$OLD" --variant "new:$NEW" --order "old new new old" --query-copy \
  --point 2x8x32768 --point 2x32x8192 --point 2x1x8192 --point 2x8x32768:lognormal \
  --limit-s $(( $(left) - 190 )) --round-s 12 > $W/abq_rounds.log 2>&1
echo "B: ab_rounds rc=$? left=$(left)"; tail -22 $W/abq_rounds.log
wait; tail -1 $W/build-full.log; echo "C at left=$(left)"
[ "$(left)" -ge 100 ] && timeout $(( $(left) - 15 )) python -m pytest -m gpu -n 4 -q -p no:cacheprovider tests/test_decode_cuda.py \
  tests/test_fused_merge_gpu.py tests/test_ragged_gpu.py tests/test_plan.py tests/test_merge_slots.py \
  tests/test_append.py tests/test_paged.py -k 'not knob_builds_compile' > $W/pytest.log 2>&1
echo "C: pytest rc=$? left=$(left)"; tail -5 $W/pytest.log
probe_end s55c3

#!/usr/bin/env bash
# Session 56, call 1: session 55's queued s55c3.sh (not run: no device lent) plus the paged prefetch of this session.
# The prefetch before griddepcontrol.wait in its final form (FOSCAR_PREWAIT_PREFETCH=4 with FOSCAR_PREWAIT_WAVE=1 and
# FOSCAR_EARLY_TRIGGER=1: first wave only, the trigger at the start where no merge kernel follows) against the default
# kernel; the same for paged caches (FOSCAR_PREWAIT_PAGED=1: page ids read relaxed, ids outside the pool skipped);
# the decode's GPU tests on a build with both. What it takes to make them the default (bench/NOTES.md §99, §100).
# Run from the repository root through scripts/gpu_offline.sh (carry .offline), at most LIMIT (default 560) s:
#   bash results/2026-12-06-s56/probes/s56c1.sh
#
# A: variants old (the default build: no prefetch), new (FOSCAR_PREWAIT_PREFETCH=4), n2 (2 steps); rounds old new n2
# n2 new old old new n2, ten points (head_dim 128 builds). P: old / np (FOSCAR_PREWAIT_PREFETCH=4,
# FOSCAR_PREWAIT_PAGED=1), rounds old np np old old np, four paged points. B: old / new with --query-copy (a
# predecessor launched without PDL: the decode's CTAs start after it ends, the wait does not wait). C: pytest -m gpu
# -n 4 over the decode's GPU tests on a full build with FOSCAR_PREWAIT_PREFETCH=4 FOSCAR_PREWAIT_PAGED=1
# (FOSCAR_NVCC_DEFINES): test_decode_cuda without its knob compiles, fused merge, ragged, plan, merge slots, append,
# paged.
#
# Expected (written before), on an H200: new / old 0.95-0.98 at INT2 8 x 32K and 32 x 8K, 0.97-1.00 at 32 x 32K,
# 64 x 8K, 64 x 32K and 8 x 128K (no point slower than +0.5%), 1 x 8K 0.96-0.99, lognormal 0.85-0.92, INT4 8 x 32K
# 0.98-1.00, paged 0.99-1.01 (not prefetched in new, its trigger unchanged); n2 within 1.5% of new; outputs
# bit-identical to old's. On an H100: session 55's call 1 ep4 ratios within 1%, 64 x 8K level. P: np / old 0.96-0.99
# at paged 8 x 32K and 32 x 8K, 0.85-0.93 at paged lognormal, 0.96-1.00 at paged 1 x 8K (the page ids' relaxed loads
# add one dependent read before the prefetch, inside the wait). B: new / old 1.00-1.02 (the prefetch just ahead of
# the copies, as §94's). C: every test passes.
. scripts/probe_preamble.sh /tmp/s56  # T0, LIMIT (560), left(), gpu.csv, commit.txt, W, probe_end
HD="FOSCAR_ONLY_HEAD_DIM=128"
OLD="$HD"
NEW="$HD,FOSCAR_PREWAIT_PREFETCH=4"
NP="$HD,FOSCAR_PREWAIT_PREFETCH=4,FOSCAR_PREWAIT_PAGED=1"
export FOSCAR_NVCC_DEFINES="FOSCAR_PREWAIT_PREFETCH=4 FOSCAR_PREWAIT_PAGED=1"  # C's build (ab_rounds sets its own)
# C's full build (with the exported FOSCAR_NVCC_DEFINES), beside A's and P's head_dim-128 builds
(MAX_JOBS=6 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build-full.log 2>&1; echo "full build rc=$?" >> $W/build-full.log) &
python -m bench.ab_rounds $W/ab --variant "old:$OLD" --variant "new:$NEW" --variant "n2:$HD,FOSCAR_PREWAIT_PREFETCH=2" \
  --order "old new n2 n2 new old old new n2" \
  --point 2x8x32768 --point 2x32x8192 --point 2x64x8192 --point 2x32x32768 --point 2x64x32768 --point 2x8x131072 \
  --point 4x8x32768 --point 2x1x8192 --point 2x8x32768:lognormal --point 2x8x32768:paged \
  --limit-s $(( $(left) - 330 )) --round-s 20 > $W/ab_rounds.log 2>&1
echo "A: ab_rounds rc=$? left=$(left)"; tail -45 $W/ab_rounds.log
[ "$(left)" -ge 260 ] && python -m bench.ab_rounds $W/abp --variant "old:$OLD" --variant "np:$NP" --order "old np np old old np" \
  --point 2x8x32768:paged --point 2x32x8192:paged --point 2x8x32768:lognormal:paged --point 2x1x8192:paged \
  --limit-s $(( $(left) - 230 )) --round-s 15 > $W/abp_rounds.log 2>&1
echo "P: ab_rounds rc=$? left=$(left)"; tail -22 $W/abp_rounds.log
[ "$(left)" -ge 200 ] && python -m bench.ab_rounds $W/abq --variant "old:$OLD" --variant "new:$NEW" --order "old new new old" --query-copy \
  --point 2x8x32768 --point 2x32x8192 --point 2x1x8192 --point 2x8x32768:lognormal \
  --limit-s $(( $(left) - 170 )) --round-s 12 > $W/abq_rounds.log 2>&1
echo "B: ab_rounds rc=$? left=$(left)"; tail -22 $W/abq_rounds.log
wait; tail -1 $W/build-full.log; echo "C at left=$(left)"
[ "$(left)" -ge 90 ] && timeout $(( $(left) - 15 )) python -m pytest -m gpu -n 4 -q -p no:cacheprovider tests/test_decode_cuda.py \
  tests/test_fused_merge_gpu.py tests/test_ragged_gpu.py tests/test_plan.py tests/test_merge_slots.py \
  tests/test_append.py tests/test_paged.py -k 'not knob_builds_compile' > $W/pytest.log 2>&1
echo "C: pytest rc=$? left=$(left)"; tail -5 $W/pytest.log
probe_end s56c1

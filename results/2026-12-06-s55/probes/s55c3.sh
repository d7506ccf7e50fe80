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
# (the commands: s56c1.sh's parts A, B and C; this file keeps session 55's plan and expectations as written)
echo "s55c3.sh: superseded by results/2026-12-06-s56/probes/s56c1.sh" >&2
exit 2

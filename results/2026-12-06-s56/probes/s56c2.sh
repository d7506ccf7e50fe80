#!/usr/bin/env bash
# Session 56, call 2 (for an H200): call 1's A/B (s56c1.sh, run on an H100) at issue 12's points on the GPU the issue
# names. Run from the repository root through scripts/gpu_offline.sh (carry .offline), at most LIMIT (default 300) s:
#   LIMIT=300 bash results/2026-12-06-s56/probes/s56c2.sh    (SHORT=1 LIMIT=150: A alone, three points)
# A: old (default) / new (FOSCAR_PREWAIT_PREFETCH=4), rounds old new new old old new, INT2 8 x 32K, 32 x 8K, 64 x 8K,
# 8 x 32K lognormal, INT4 8 x 32K. P: old / np (FOSCAR_PREWAIT_PREFETCH=4, FOSCAR_PREWAIT_PAGED=1) at paged 8 x 32K.
# B: old / new with --query-copy at INT2 8 x 32K and 1 x 8K.
# Expected (written before, from call 1's H100 ratios and the H200's shorter calls): new / old 0.96-0.98 at 8 x 32K
# (45.6-45.9 us -> 44-45, 83-84% of the ceiling: issue 12's 85% still missed), 0.97-0.99 at 32 x 8K, 0.98-1.00 at
# 64 x 8K, 0.85-0.92 lognormal, INT4 1.000-1.008; np / old 0.96-0.99 at paged 8 x 32K; B: new / old 1.00-1.02 at
# 8 x 32K, 1.04-1.09 at 1 x 8K (call 1: 1.007, 1.068). Outputs bit-identical.
LIMIT="${LIMIT:-300}"
. scripts/probe_preamble.sh /tmp/s56c2  # T0, LIMIT, left(), gpu.csv, commit.txt, W, probe_end
HD="FOSCAR_ONLY_HEAD_DIM=128"
# SHORT=1 (little device time left): A alone at three points, rounds old new new old, then the end
PTS=(--point 2x8x32768 --point 2x32x8192 --point 2x64x8192 --point 2x8x32768:lognormal --point 4x8x32768)
ORDER="old new new old old new"; A_LEFT=110
if [ "${SHORT:-0}" = 1 ]; then
  PTS=(--point 2x8x32768 --point 2x32x8192 --point 2x8x32768:lognormal); ORDER="old new new old"; A_LEFT=10
fi
python -m bench.ab_rounds $W/ab --variant "old:$HD" --variant "new:$HD,FOSCAR_PREWAIT_PREFETCH=4" \
  --order "$ORDER" "${PTS[@]}" --limit-s $(( $(left) - A_LEFT )) --round-s 15 > $W/ab_rounds.log 2>&1
echo "A: ab_rounds rc=$? left=$(left)"; tail -30 $W/ab_rounds.log
[ "${SHORT:-0}" = 1 ] && { probe_end s56c2; exit 0; }
python -m bench.ab_rounds $W/abp --variant "old:$HD" \
  --variant "np:$HD,FOSCAR_PREWAIT_PREFETCH=4,FOSCAR_PREWAIT_PAGED=1" --order "old np np old" --point 2x8x32768:paged \
  --limit-s $(( $(left) - 65 )) --round-s 10 > $W/abp_rounds.log 2>&1
echo "P: ab_rounds rc=$? left=$(left)"; tail -12 $W/abp_rounds.log
python -m bench.ab_rounds $W/abq --variant "old:$HD" --variant "new:$HD,FOSCAR_PREWAIT_PREFETCH=4" --query-copy \
  --order "old new new old" --point 2x8x32768 --point 2x1x8192 --limit-s $(( $(left) - 15 )) --round-s 10 \
  > $W/abq_rounds.log 2>&1
echo "B: ab_rounds rc=$? left=$(left)"; tail -14 $W/abq_rounds.log
probe_end s56c2

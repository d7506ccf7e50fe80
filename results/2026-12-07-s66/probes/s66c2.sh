#!/usr/bin/env bash
# Session 66, call 2. At most LIMIT (default 480) s. Run from the repository root through scripts/gpu_offline.sh.
# Call 1 (H100) timed the merge kernel (FOSCAR_MERGE=kernel) at 0.903 / 0.935 / 0.980 of the folded BF16 two levels
# at INT2 1 x 512K, INT4 1 x 512K and one 512K among seven 4K (8 query heads over 1 KV head). So this commit adds
# FOSCAR_MERGE_LEVELS (1: BF16 plans past 32 chunks keep the two levels; 0: they take the merge kernel, as FP8 and
# per-value plans do; the default 1 at first, 0 from the commit after) and times kernel (FOSCAR_MERGE_LEVELS=0)
# against levels (=1) at more points.
# Expected, kernel / levels (written before the run): INT2 1 x 512K 0.88-0.95; INT4 1 x 512K 0.92-0.97; one-long
# 0.96-1.00; INT2 1 x 256K 0.90-1.00; INT4 2 x 512K paged 0.95-1.02; INT2 1 x 1M 0.85-0.95; INT2 1 x 512K at 32 query
# heads over 8 KV heads 0.95-1.02; INT2 lognormal 4 x 512K 0.97-1.03. max_rel_err the same to 2 figures.
# On an H200 first: issue 12's INT2 bench (s66c1.sh's part B, expectations there). Then the merge's GPU tests
# (tests/test_fused_merge_gpu.py, the new BF16 one among them) with what time is left.
LIMIT="${LIMIT:-480}"
. scripts/probe_preamble.sh /tmp/s66c2
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then  # issue 12's bench, as s66c1.sh's
  sed -n '/^if nvidia-smi/,/^fi$/p' results/2026-12-07-s66/probes/s66c1.sh | sed '1d;$d' | sed 's#/tmp/s66c1#/tmp/s66c2#g' > $W/b.sh
  . $W/b.sh
fi
python -m bench.ab_rounds $W/ab --variant "levels:" --variant "kernel:" --run-env levels:FOSCAR_MERGE_LEVELS=1 \
  --run-env kernel:FOSCAR_MERGE_LEVELS=0 \
  --order "levels kernel kernel levels levels kernel" \
  --point 2x1x524288:h8-1 --point 4x1x524288:h8-1 --point 2x8x524288:one-long:h8-1 --point 2x1x262144:h8-1 \
  --point 4x2x524288:paged:h8-1 --point 2x1x1048576:h8-1 --point 2x1x524288:h32-8 --point 2x4x524288:lognormal:h8-1 \
  --limit-s $(( $(left) - 150 )) --round-s 10 > $W/ab_rounds.log 2>&1
echo "ab_rounds rc=$? left=$(left)"; tail -30 $W/ab_rounds.log; cp $W/ab_rounds.log $OUT/ab_rounds.txt
timeout $(( $(left) - 15 )) python -m pytest -q -m gpu -n 4 tests/test_fused_merge_gpu.py > $W/tests.log 2>&1
echo "tests rc=$? left=$(left)"; tail -5 $W/tests.log; cp $W/tests.log $OUT/tests.txt
probe_end s66c2

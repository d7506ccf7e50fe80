#!/usr/bin/env bash
# Session 58, call 1 (for an H200; SKIP_A=1 on an H100, where session 56 measured A). Run from the repository root
# through scripts/gpu_offline.sh (carry .offline), at most LIMIT (default 480) s.
# T: the two GPU tests that session 57 added after its last GPU run (test_ragged_gpu.py's "64-one-long-capped" cases,
#    test_a_build_without_the_chunk_cap_reads_the_chunk_table), on the default build.
# A: session 56's s56c2 part A: old (default) / new (FOSCAR_PREWAIT_PREFETCH=4) at issue 12's INT2 points, rounds
#    old new new old old new. Expected (written in session 56, from its H100 ratios): new / old 0.96-0.98 at 8 x 32K
#    (83-84% of the ceiling), 0.97-0.99 at 32 x 8K, 0.98-1.00 at 64 x 8K, 0.85-0.92 lognormal, INT4 1.000-1.008.
# I: INT4 at 8 query heads over 1 KV head (Llama-3.1-70B TP8), where INT4 takes the BF16 PV (the packed integer PV
#    needs gqa <= 4) and session 57 read max_rel_err 6.9e-3: old / i4 (FOSCAR_IMMA_PV_INT4=1: INT4's two-mma integer
#    PV where the packed one does not apply), rounds old i4 i4 old. Expected (written before): i4 err 1.5-2.5e-3 at
#    gqa 8 (DESIGN 5.2's fixed point; INT2's two-mma form reads 1.8e-3 there), time i4 / old 0.97-1.07 (§46 at gqa 4:
#    no faster, 7% slower at 64 x 8K with a 20-byte spill); at gqa 4 (4x8x32768, packed PV either way) 0.99-1.02
#    and the same output bits unless the other form's registers move the packed one.
LIMIT="${LIMIT:-480}"
. scripts/probe_preamble.sh /tmp/s58c1  # T0, LIMIT, left(), gpu.csv, commit.txt, W, probe_end
HD="FOSCAR_ONLY_HEAD_DIM=128"
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built left=$(left): $(tail -1 $W/build.log)"
timeout 120 python -m pytest -m gpu -q -rfE --tb=short -p no:cacheprovider tests/test_ragged_gpu.py \
  -k "one-long-capped or chunk_cap" > $W/pytest.log 2>&1
echo "T: pytest rc=$? left=$(left): $(tail -1 $W/pytest.log)"; grep -E '^(FAILED|ERROR)' $W/pytest.log | head
if [ "${SKIP_A:-0}" != 1 ]; then
  python -m bench.ab_rounds $W/ab --variant "old:$HD" --variant "new:$HD,FOSCAR_PREWAIT_PREFETCH=4" \
    --order "old new new old old new" --point 2x8x32768 --point 2x32x8192 --point 2x64x8192 \
    --point 2x8x32768:lognormal --point 4x8x32768 --limit-s $(( $(left) - 150 )) --round-s 15 > $W/ab_rounds.log 2>&1
  echo "A: ab_rounds rc=$? left=$(left)"; tail -30 $W/ab_rounds.log
fi
python -m bench.ab_rounds $W/abi --variant "old:$HD" --variant "i4:$HD,FOSCAR_IMMA_PV_INT4=1" \
  --order "old i4 i4 old" --point 4x1x32768:h8-1 --point 4x8x32768:h8-1 --point 4x64x8192:h8-1 \
  --point 4x32x32768:h8-1 --point 4x8x32768 --limit-s $(( $(left) - 15 )) --round-s 12 > $W/abi_rounds.log 2>&1
echo "I: ab_rounds rc=$? left=$(left)"; tail -30 $W/abi_rounds.log
probe_end s58c1

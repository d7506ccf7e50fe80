#!/usr/bin/env bash
# Session 70 call 3: FOSCAR_LONG_CHUNK_TOKENS 512 (k05) against 256 (k025) and 4096 (old, the default at this commit),
# where the two candidates differ: a capacity of 8K-64K at one or two KV heads (the least chunk is min(ceil(L / 32),
# max(T, ceil(capacity / 128))) at one KV head on 132 SMs). Calls 1-2 (H100): k05 / old 0.54 at 1 x 128K, 0.71 at
# 1 x 64K, 0.79 at 1 x 32K; k025 / old 0.77 at 1 x 16K where k05 is 1.00; both 0.99-1.01 at 8 KV heads.
# Written before the run (k025 / k05): 1 x 16K 0.74-0.80 (call 2); 1 x 32K 0.90-1.05 (128 chunks of 256 instead of 64
# of 512; §101's 20.5 us at 128 x 256 was before the two-level merge); batch 2-8 x 16K at one KV head 0.95-1.02 (the
# slots bound the chunks there); paged 1 x 16K as contiguous +-0.05; INT4 1 x 16K 0.80-0.95; 2 KV heads 1 x 16K
# 0.85-1.00; lognormal 8 x 32K 0.95-1.05; 1 x 64K and 1 x 8K 0.98-1.02 (same plans).
# Then the ragged-batch GPU tests with FOSCAR_LONG_CHUNK_TOKENS=256 (every plan at its smallest floor).
LIMIT="${LIMIT:-560}"
. scripts/probe_preamble.sh /tmp/s70
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
python -m bench.ab_rounds $W/ab --variant "old:" --variant "k05:" --variant "k025:" \
  --run-env k05:FOSCAR_LONG_CHUNK_TOKENS=512 --run-env k025:FOSCAR_LONG_CHUNK_TOKENS=256 \
  --order "old k05 k025 k025 k05 old" --point 2x1x16384:h8-1 --point 2x1x32768:h8-1 --point 2x1x24576:h8-1 \
  --point 2x2x16384:h8-1 --point 2x4x16384:h8-1 --point 2x8x16384:h8-1 --point 2x1x16384:paged:h8-1 \
  --point 4x1x16384:h8-1 --point 4x1x32768:h8-1 --point 2x1x16384:h16-2 --point 2x1x32768:h16-2 \
  --point 2x8x32768:lognormal:h8-1 --point 2x1x65536:h8-1 --point 2x1x8192:h8-1 \
  --limit-s 240 --round-s 12 > $W/ab.log 2>&1
echo "R: ab_rounds rc=$? left=$(left)"; tail -40 $W/ab.log; cp $W/ab.log $OUT/ab_rounds.txt
FOSCAR_LONG_CHUNK_TOKENS=256 timeout $(( $(left) > 60 ? $(left) - 30 : 30 )) python -m pytest -q -m gpu -n 4 \
  tests/test_ragged_gpu.py tests/test_fused_merge_gpu.py > $W/tests.log 2>&1
echo "T: tests at 256 rc=$? left=$(left)"; tail -3 $W/tests.log; cp $W/tests.log $OUT/tests.txt
probe_end s70c3

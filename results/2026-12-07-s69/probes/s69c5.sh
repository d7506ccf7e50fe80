#!/usr/bin/env bash
# Session 69, call 5 (NOT RUN: refused at 07:20, too little device time left to start a machine), for the 295 s left
# after call 4: a short first look at FOSCAR_LONG_CHUNK_TOKENS=1024
# (k1) against the default 4096 (old), the core of long-tokens.sh. At most LIMIT (default 150) s. Expected (written
# before the run, as in long-tokens.sh): k1 / old at 8 query heads over 1 KV head, INT2 1 x 128K 0.55-0.75, INT4 1 x 128K
# 0.60-0.80, INT2 one 128K among seven 4K 0.55-0.80, INT2 1 x 32K (the same plan) 0.98-1.02; the GPU test passes.
LIMIT="${LIMIT:-150}"
. scripts/probe_preamble.sh /tmp/s69
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
timeout 45 python -m pytest -q -m gpu -n 2 \
  tests/test_ragged_gpu.py::test_long_chunk_tokens_gives_a_128k_sequence_more_chunks > $W/tests.log 2>&1
echo "T: tests rc=$? left=$(left)"; tail -3 $W/tests.log; cp $W/tests.log $OUT/tests.txt
python -m bench.ab_rounds $W/ab --variant "old:" --variant "k1:" --run-env k1:FOSCAR_LONG_CHUNK_TOKENS=1024 \
  --order "old k1 k1 old" --point 2x1x131072:h8-1 --point 4x1x131072:h8-1 --point 2x8x131072:one-long:h8-1 \
  --point 2x1x32768:h8-1 --limit-s $(( $(left) > 40 ? $(left) - 8 : 30 )) --round-s 6 > $W/ab_rounds.log 2>&1
echo "R: ab_rounds rc=$? left=$(left)"; tail -22 $W/ab_rounds.log; cp $W/ab_rounds.log $OUT/ab_rounds.txt
probe_end s69c5
